// Starts Swagger UI on /docs (a static file: the pages allow no inline script).
window.addEventListener("DOMContentLoaded", function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-url"),
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
  });
});

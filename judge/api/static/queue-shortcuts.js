// Keyboard shortcut of the review queue page: Enter opens the first item.
// A static file: the page's Content-Security-Policy allows no inline script.
document.addEventListener("keydown", function (e) {
  if (e.key === "Enter" && !e.target.matches("input, textarea, button, a")) {
    var start = document.getElementById("start");
    if (start) { e.preventDefault(); start.click(); }
  }
});

"""judge.safety.config_secrets: passwords under a key in another language (``passwort``,
``contraseña``, ``пароль``, ``密码``...) are found as under ``password``, their placeholders are
kept as for English keys, and the same words in ordinary prose are left alone."""

from __future__ import annotations

import pytest

from judge.safety.redact import redact

CONFIG_PASSWORD = "[REDACTED:config-password]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # YAML
        (
            "db:\n  benutzer: app\n  passwort: Regenbogen-pierogi-89\n",
            f"db:\n  benutzer: app\n  passwort: {CONFIG_PASSWORD}\n",
        ),
        (
            "数据库:\n  用户: root\n  密码: Qk4i.6J=mqDBz\n",
            f"数据库:\n  用户: root\n  密码: {CONFIG_PASSWORD}\n",
        ),
        ("tietokanta:\n  salasana: FonGw*ssx3l", f"tietokanta:\n  salasana: {CONFIG_PASSWORD}"),
        ("parola: Qx7!mZp2rT", f"parola: {CONFIG_PASSWORD}"),
        # INI, properties
        ("[база]\nпароль = Mistral1992#", f"[база]\nпароль = {CONFIG_PASSWORD}"),
        (
            "conexion.usuario=ventas\nconexion.contraseña=Regenbogen1965?",
            f"conexion.usuario=ventas\nconexion.contraseña={CONFIG_PASSWORD}",
        ),
        (
            "[verbinding]\nwachtwoord = Harbor-tango-71",
            f"[verbinding]\nwachtwoord = {CONFIG_PASSWORD}",
        ),
        # .env
        ("KATA_SANDI=Matrjoschka@Koala3010", f"KATA_SANDI={CONFIG_PASSWORD}"),
        ("DB_KENNWORT=Falconharbor12&", f"DB_KENNWORT={CONFIG_PASSWORD}"),
        # JSON, a Python dict
        (
            '{"kullanıcı": "yonetici", "şifre": "Papillon2006#"}',
            f'{{"kullanıcı": "yonetici", "şifre": "{CONFIG_PASSWORD}"}}',
        ),
        (
            'config = {"usuario": "app", "senha": "nebbia2016?", "porta": 5432}',
            f'config = {{"usuario": "app", "senha": "{CONFIG_PASSWORD}", "porta": 5432}}',
        ),
        ('{"パスワード": "Lisbonne.Lumikki0504"}', f'{{"パスワード": "{CONFIG_PASSWORD}"}}'),
        ('{"mot_de_passe": "Lisbonne2023?"}', f'{{"mot_de_passe": "{CONFIG_PASSWORD}"}}'),
        # XML: an element and an attribute
        (
            "<연결>\n  <비밀번호>S4kur4$485</비밀번호>\n</연결>",
            f"<연결>\n  <비밀번호>{CONFIG_PASSWORD}</비밀번호>\n</연결>",
        ),
        ('<db user="a" senha="Qx7mZp2rT"/>', f'<db user="a" senha="{CONFIG_PASSWORD}"/>'),
        # A log's pairs, a setter
        (
            "Błąd logowania: użytkownik=jan hasło=panda-girasol-53 (konto zablokowane)",
            f"Błąd logowania: użytkownik=jan hasło={CONFIG_PASSWORD} (konto zablokowane)",
        ),
        ('conn.setSenha("Qx7mZp2rT");', f'conn.setSenha("{CONFIG_PASSWORD}");'),
    ],
)
def test_passwords_under_keys_in_other_languages_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == (expected, 1)


@pytest.mark.parametrize(
    "text",
    [
        # Placeholders and code, kept as under ``password`` (``password: ${DB_PASSWORD}``).
        "passwort: <dein-passwort>",
        "senha: ${DB_SENHA}",
        "пароль = os.environ['DB_PASSWORD']",
        "contraseña: null",
        "hasło = haslo",
        "KENNWORT=",
        '"şifre": ""',
    ],
)
def test_placeholders_under_keys_in_other_languages_are_kept(text: str) -> None:
    assert redact(text) == (text, 0)


@pytest.mark.parametrize(
    "text",
    [
        # The words in sentences, followed by ``:``, a quoted word or a parenthesis.
        'Nel dizionario, la parola: "ciao" significa hello.',
        "La parola: perché? Non lo so.",
        "Parola: perché? Non lo so, è una parola difficile.",
        "Il a pris la parole: «liberté» était son thème.",
        "Parole: granted in 2019-05-01, after review.",
        "A resenha: ótimo-livro!",
        "Você esqueceu a senha: clique-aqui!",
        'Her sifre "abc123x" olarak ayarlandı',
        "Bu kelimenin şifre: çözülmesi-gerekiyor!",
        'la parola ("ciao") significa',
        "Ο κωδικός: ΑΒΓ-123 της παραγγελίας σας.",
        "Zadejte heslo: minimálně-8-znaků!",
        # ASCII texts with the short first words of ``mat khau``, ``mot de passe``, ``kata sandi``.
        "format: remote-motion automatic match, kata: 'x'",
    ],
)
def test_the_words_in_prose_are_left_alone(text: str) -> None:
    assert redact(text) == (text, 0)

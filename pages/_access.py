"""Who may use the app: the settings' password and Streamlit's OIDC login.

The entry script asks access_gate() before st.navigation registers any page of the
app. While a visitor is not let in, the only page is the login page: nothing from the
knowledge base, the sidebar or the conversations is drawn. Each page also starts with
require_access(), for the one case where Streamlit runs a page without the entry script.

- ``RAGKIT_APP_PASSWORD`` set: a password form, compared in constant time; the grant
  lives in the browser session (a reload asks again).
- ``[auth]`` in ``.streamlit/secrets.toml``: Streamlit's OIDC login (st.login, st.user).
- Both configured: both are asked. Neither: the app is open (bound to 127.0.0.1 by
  .streamlit/config.toml).

Every run records whether its session is let in, for the upload gate
(``pages._upload_gate``: Streamlit's upload endpoint takes no file from a session that
has not logged in), and wrong passwords are slowed down per address and for the whole
server (``ragkit.app.access.LoginThrottle``).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from pathlib import Path

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pages import _upload_gate
from ragkit import SettingsError, load_settings
from ragkit.app import LoginThrottle, escape_markdown

_GRANTED = "ragkit-password-ok"
_ASKED_PAGE = "ragkit-page-asked-before-login"


def password_matches(entered: str, expected: str) -> bool:
    """True when the typed password is the configured one (constant-time comparison)."""
    return hmac.compare_digest(entered.encode("utf-8"), expected.encode("utf-8"))


def configured_password() -> str | None:
    """RAGKIT_APP_PASSWORD, or None when the app has no password."""
    secret = load_settings().app_password
    return secret.get_secret_value() if secret is not None else None


def oidc_configured() -> bool:
    """True when .streamlit/secrets.toml has an [auth] section for Streamlit's OIDC login."""
    return st.secrets.load_if_toml_exists() and "auth" in st.secrets


def current_person() -> str | None:
    """The logged-in person's e-mail with the OIDC login (their conversations are theirs,
    RAGKIT_EDITORS applies to them); None without a login or with the shared password,
    which know no people."""
    if oidc_configured() and st.user.is_logged_in:
        return st.user.get("email") or st.user.get("sub")
    return None


def may_edit_documents() -> bool:
    """Whether this visitor may add, edit and delete documents (see ``ragkit.store.people``)."""
    from ragkit.app import may_edit

    return may_edit(load_settings(), current_person())


def access_gate() -> Callable[[], None] | None:
    """None when this visitor may use the app; otherwise the page to show instead. The
    verdict is recorded for the upload gate either way."""
    gate = _verdict()
    context = get_script_run_ctx()
    _upload_gate.record(context.session_id if context is not None else None, gate is None)
    return gate


def _verdict() -> Callable[[], None] | None:
    try:
        password = configured_password()
    except SettingsError:
        return settings_error_page  # fail closed: a broken configuration shows no data
    login = oidc_configured() or password is not None
    try:
        _upload_gate.install()
    except _upload_gate.UploadGateUnavailable:
        if login:
            return upload_gate_error_page  # fail closed: anyone could fill the server with uploads
    if oidc_configured() and not st.user.is_logged_in:
        return oidc_login_page
    if password is not None and not st.session_state.get(_GRANTED):
        return password_page
    return None


@st.cache_resource(show_spinner=False)
def login_throttle() -> LoginThrottle:
    """The process's one throttle on password guesses (shared by every session)."""
    settings = load_settings()
    return LoginThrottle(settings.login_free_guesses, settings.login_guesses_per_hour)


def client_address() -> str:
    """The visitor's address as the server sees it (one name for every local visitor)."""
    return st.context.ip_address or "localhost"


def require_access(page_file: str) -> None:
    """First line of every page (``require_access(__file__)``): send a visitor who is not let
    in to the entry script's login, which opens this page once they are.

    Normally a page only runs after the entry script let the visitor in. But until the
    entry script has called st.navigation once in this server process, Streamlit serves a
    URL such as /documents by running pages/documents.py on its own (its old pages/
    directory mode); this check keeps that first request from showing any data.
    """
    if access_gate() is not None:
        remember_asked_page(Path(page_file).stem)
        st.switch_page("streamlit_app.py")  # raises: nothing after this line runs


def remember_asked_page(url_path: str) -> None:
    """Remember the page a visitor who is not let in asked for ("documents"; "" for Chat,
    which keeps what an earlier request asked for): the login's reruns all run at the root."""
    if url_path:
        st.session_state[_ASKED_PAGE] = url_path


def asked_page() -> str:
    """The page asked for before the login (once: it is forgotten as it is read), or ""."""
    return st.session_state.pop(_ASKED_PAGE, "")


def upload_gate_error_page() -> None:
    """Why the app does not open: the login could not be extended to uploads."""
    st.error("ragkit cannot start: this Streamlit version's upload endpoint cannot be restricted to visitors "
             "who have logged in. Install the Streamlit version in requirements.txt.", icon=":material/error:")


def settings_error_page() -> None:
    """Why the app cannot start (the configuration is invalid)."""
    try:
        load_settings()
    except SettingsError as exc:
        st.error(f"ragkit cannot start: {escape_markdown(str(exc))}", icon=":material/error:")


def oidc_login_page() -> None:
    """A log-in button that starts Streamlit's OIDC flow."""
    st.title("ragkit")
    st.markdown("Log in to open the knowledge base.")
    st.button("Log in", icon=":material/login:", type="primary", on_click=st.login)


def password_page() -> None:
    """The password form; on the right password the app reruns with access granted."""
    st.title("ragkit")
    with st.form("ragkit-login"):
        entered = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Log in", icon=":material/login:", type="primary")
    if not submitted:
        return
    expected = configured_password()
    if expected is None:
        return
    attempt = login_throttle().attempt(client_address(), lambda: password_matches(entered, expected))
    if attempt.granted:
        st.session_state[_GRANTED] = True
        st.rerun()
    st.error(attempt.reason or "Wrong password.", icon=":material/lock:")


def render_logout() -> None:
    """A log-out button at the bottom of the sidebar when the app asks for a login."""
    oidc = oidc_configured()
    if not (oidc or st.session_state.get(_GRANTED)):
        return
    if st.sidebar.button("Log out", icon=":material/logout:", key="ragkit-logout"):
        st.session_state.pop(_GRANTED, None)
        if oidc:
            st.logout()
        st.rerun()

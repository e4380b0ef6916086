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
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

import streamlit as st

from ragkit.config import SettingsError, load_settings
from ragkit.render import escape_markdown

_GRANTED = "ragkit-password-ok"


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


def access_gate() -> Callable[[], None] | None:
    """None when this visitor may use the app; otherwise the page to show instead."""
    try:
        password = configured_password()
    except SettingsError:
        return settings_error_page  # fail closed: a broken configuration shows no data
    if oidc_configured() and not st.user.is_logged_in:
        return oidc_login_page
    if password is not None and not st.session_state.get(_GRANTED):
        return password_page
    return None


def require_access() -> None:
    """First line of every page: send a visitor who is not let in to the entry script's login.

    Normally a page only runs after the entry script let the visitor in. But until the
    entry script has called st.navigation once in this server process, Streamlit serves a
    URL such as /documents by running pages/documents.py on its own (its old pages/
    directory mode); this check keeps that first request from showing any data.
    """
    if access_gate() is not None:
        st.switch_page("streamlit_app.py")  # raises: nothing after this line runs


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
    if expected is not None and password_matches(entered, expected):
        st.session_state[_GRANTED] = True
        st.rerun()
    st.error("Wrong password.", icon=":material/lock:")


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

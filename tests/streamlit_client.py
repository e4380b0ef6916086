"""A raw client of a running Streamlit server, speaking its wire protocol as an attacker
would (no browser): the XSRF cookie from ``/_stcore/health``, a websocket on
``/_stcore/stream`` for a session, protobuf BackMsgs to run the script and fill widgets,
and PUTs to ``/_stcore/upload_file/<session>/<file>``.

Each client can come from its own loopback address (127.0.0.2, 127.0.0.3, ...): Linux
routes all of 127/8 to the loopback interface, so the server sees different clients.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import uuid
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

XSRF_COOKIE = "_streamlit_xsrf"


@dataclass
class Screen:
    """What one script run sent: the widgets (label -> proto) and the alerts' texts."""

    text_inputs: dict[str, object] = field(default_factory=dict)
    buttons: dict[str, object] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


class RawClient:
    """One visitor: its own source address, XSRF cookie and websocket session."""

    def __init__(self, port: int, source: str = "127.0.0.1", host: str = "127.0.0.1"):
        self.port, self.source, self.host = port, source, host
        self.origin = f"http://{host}:{port}"
        self.xsrf = self._xsrf_cookie()
        sock = socket.create_connection((host, port), timeout=60, source_address=(source, 0))
        self.ws = connect(f"ws://{host}:{port}/_stcore/stream", sock=sock, subprotocols=["streamlit", self.xsrf],
                          additional_headers={"Cookie": f"{XSRF_COOKIE}={self.xsrf}", "Origin": self.origin},
                          max_size=None, open_timeout=60)
        self.session_id: str | None = None
        self.form: Screen | None = None

    def _xsrf_cookie(self) -> str:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=60, source_address=(self.source, 0))
        try:
            connection.request("GET", "/_stcore/health")
            response = connection.getresponse()
            response.read()
            cookies = response.headers.get_all("Set-Cookie") or []
        finally:
            connection.close()
        for cookie in cookies:
            name, _, rest = cookie.partition("=")
            if name.strip() == XSRF_COOKIE:
                return rest.split(";", 1)[0]
        raise AssertionError(f"no {XSRF_COOKIE} cookie from /_stcore/health: {cookies}")

    def run(self, widget_states: list | None = None, timeout_s: float = 120) -> Screen:
        """Ask for a script run (with these widget states) and read until it finishes
        (through any reruns it asks for)."""
        message = BackMsg()
        message.rerun_script.SetInParent()
        for state in widget_states or []:
            message.rerun_script.widget_states.widgets.append(state)
        self.ws.send(message.SerializeToString())
        screen = Screen()
        while True:
            forward = ForwardMsg()
            forward.ParseFromString(self.ws.recv(timeout=timeout_s))
            kind = forward.WhichOneof("type")
            if kind == "new_session":
                self.session_id = forward.new_session.initialize.session_id
            elif kind == "delta" and forward.delta.WhichOneof("type") == "new_element":
                _read_element(forward.delta.new_element, screen)
            elif kind == "script_finished" and forward.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return screen  # a run that ended in st.rerun() is followed by the next one

    def log_in(self, password: str) -> Screen:
        """Fill the password form and press Log in, as the browser would (widget ids come
        from the form as first drawn; Streamlit keeps them stable across runs)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        if self.form is None:
            self.form = self.run()
        typed = WidgetState(id=self.form.text_inputs["Password"].id, string_value=password)
        pressed = WidgetState(id=self.form.buttons["Log in"].id, trigger_value=True)
        return self.run([typed, pressed])

    def upload(self, payload: bytes, filename: str = "big.txt") -> int | str:
        """PUT one file to this session's upload URL; the HTTP status, or how the
        connection ended when the server closed it before taking the body."""
        boundary = uuid.uuid4().hex
        head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
                "Content-Type: text/plain\r\n\r\n").encode()
        tail = f"\r\n--{boundary}--\r\n".encode()
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120, source_address=(self.source, 0))
        try:
            connection.putrequest("PUT", f"/_stcore/upload_file/{self.session_id}/{uuid.uuid4()}")
            for name, value in (("Content-Type", f"multipart/form-data; boundary={boundary}"),
                                ("Content-Length", str(len(head) + len(payload) + len(tail))),
                                ("X-Xsrftoken", self.xsrf), ("Cookie", f"{XSRF_COOKIE}={self.xsrf}"),
                                ("Origin", self.origin)):
                connection.putheader(name, value)
            connection.endheaders()
            try:
                connection.send(head)
                view = memoryview(payload)
                for offset in range(0, len(view), 1 << 20):
                    connection.send(view[offset : offset + (1 << 20)])
                connection.send(tail)
            except (BrokenPipeError, ConnectionResetError) as exc:
                return _early_answer(connection) or f"closed while sending ({type(exc).__name__})"
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def close(self) -> None:
        """Leave: close the websocket."""
        with contextlib.suppress(Exception):
            self.ws.close()


def _early_answer(connection: http.client.HTTPConnection) -> int | None:
    """The status the server sent before it closed the connection, when it can be read."""
    with contextlib.suppress(Exception):
        response = connection.getresponse()
        return response.status
    return None


def _read_element(element, screen: Screen) -> None:
    kind = element.WhichOneof("type")
    if kind == "text_input":
        screen.text_inputs[element.text_input.label] = element.text_input
    elif kind == "button":
        screen.buttons[element.button.label] = element.button
    elif kind == "alert":
        (screen.errors if element.alert.format == element.alert.ERROR else screen.texts).append(element.alert.body)
    elif kind == "markdown":
        screen.texts.append(element.markdown.body)
    elif kind == "heading":
        screen.texts.append(element.heading.body)

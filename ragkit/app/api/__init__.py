"""ragkit's HTTP API, served beside the app on its port by ``streamlit run streamlit_app.py``:
``/v1`` in OpenAI's shapes (models, chat completions, streaming) and ``/api`` for ragkit's own
(knowledge bases, documents, search, ``/api/openapi.json``). Off until ``RAGKIT_API_KEYS`` is
set; docs/api.md is the manual.

    app = st.App("streamlit_app.py", routes=api_routes(get_service))
"""

from ragkit.app.api.server import ApiServer, api_routes

__all__ = ["ApiServer", "api_routes"]

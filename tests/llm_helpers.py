"""Shared by the tests that talk to a scripted OpenAI-compatible server."""


def llm_settings(settings, base_url, **extra):
    """``settings`` pointed at the test server's ``base_url``, one model, no retries, short waits."""
    return settings.model_copy(update={
        "openai_api_key": "sk-test", "openai_base_url": base_url, "chat_model": "test-model",
        "llm_max_retries": 0, "llm_timeout_s": 3.0, **extra,
    })

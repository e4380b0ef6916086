"""ragkit: a persistent, bilingual (Chinese/English) knowledge base with conversational RAG.

Library first: :class:`ragkit.kb.KnowledgeBase` for documents and search,
:class:`ragkit.chat.ChatEngine` for cited multi-turn answers, ``python -m ragkit`` for
the command line. Works offline by default.
"""

__version__ = "0.1.0"

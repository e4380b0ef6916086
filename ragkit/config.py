"""One validated settings object for the whole library.

Values come from ``RAGKIT_*`` environment variables (and ``OPENAI_*`` for the model
endpoint), optionally from a ``.env`` file in the working directory, else defaults.
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ragkit.errors import SettingsError

DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
NEW_STORE_EMBEDDING_BACKEND = "onnx-int8"  # what embedding_backend="auto" gives a store that has recorded no model
POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
CHROMA_TOKEN_PUNCTUATION = frozenset(string.punctuation)


def redacted_url(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages)."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


API_KEY_FORBIDDEN = frozenset(":;,")
MIN_API_KEY_CHARS = 16


def parse_api_keys(text: str) -> list[tuple[str, tuple[str, ...] | None]]:
    """``RAGKIT_API_KEYS`` as (secret, knowledge base names or ids; None: all) pairs, in order;
    ValueError saying which entry is wrong (by its number, never its secret)."""
    entries: list[tuple[str, tuple[str, ...] | None]] = []
    seen: set[str] = set()
    for number, entry in enumerate((part.strip() for part in text.split(";")), start=1):
        if not entry:
            continue
        secret, _, scope = entry.partition(":")
        secret = secret.strip()
        if len(secret) < MIN_API_KEY_CHARS:
            raise ValueError(f"entry {number}: an API key is at least {MIN_API_KEY_CHARS} characters long")
        if not all(ch.isascii() and (ch.isalnum() or ch in CHROMA_TOKEN_PUNCTUATION) and ch not in API_KEY_FORBIDDEN
                   for ch in secret):
            raise ValueError(f"entry {number}: an API key holds ASCII letters, digits and punctuation other than "
                             "':' ';' ',' only (no spaces)")
        if secret in seen:
            raise ValueError(f"entry {number}: the same API key is given twice")
        seen.add(secret)
        names = tuple(" ".join(name.split()) for name in scope.split(",") if name.strip())
        if ":" in entry and not names:
            raise ValueError(f"entry {number}: name the knowledge bases after ':' (or '*' for all)")
        entries.append((secret, None if not names or "*" in names else names))
    if not entries:
        raise ValueError("no API key given")
    return entries


class Settings(BaseSettings):
    """Every tunable of ragkit, with defaults that work offline."""

    model_config = SettingsConfigDict(
        env_prefix="RAGKIT_", env_file=".env", extra="ignore", frozen=True,
        hide_input_in_errors=True,  # a rejected value may be a secret (a token, a password)
    )

    # storage
    data_dir: Path = Path("data")
    chroma_url: str | None = Field(
        default=None, description="http(s)://host:port of a Chroma server; default is on disk"
    )
    chroma_token: SecretStr | None = Field(
        default=None, description="the token a Chroma server with token auth asks for, sent as "
        "'Authorization: Bearer <token>' (never logged or shown)")
    database_url: str | None = Field(
        default=None, description="postgresql://user:password@host:port/database: the catalog and the conversations "
        "live there (shared by every replica); default is SQLite files in the data dir")
    write_lease_s: float = Field(
        default=60.0, ge=3, le=3600, description="a writer renews the lease of its half-written version every third "
        "of this; a replica that stopped renewing this long is taken for dead and its version is swept")
    vector_first_read_wait_s: float = Field(
        default=90.0, gt=0, le=3600, description="a process's first read of an on-disk vector store waits this long "
        "for another process's save (a large index rebuilds in a minute); then searches use keywords only")
    vector_read_wait_s: float = Field(
        default=10.0, gt=0, le=3600, description="a process that already read the on-disk vector store waits this "
        "long for another process's save before it searches by keywords only")
    collection: str = "ragkit"
    hnsw_max_neighbors: int = Field(
        default=32, ge=8, le=128,
        description="links per element of a new (or rebuilt) vector index; Chroma's default 16 leaves some "
        "near-duplicate passages out of the reach of any search",
    )
    hnsw_ef_construction: int = Field(
        default=200, ge=32, le=2000, description="how widely a new (or rebuilt) index looks for each element's links"
    )
    keep_originals: bool = Field(
        default=True, description="keep each added file (by its SHA-256) so it can be viewed and downloaded")
    originals_dir: Path | None = Field(default=None, description="where the kept files go; default data_dir/originals")
    samples_dir: Path = Path(__file__).resolve().parent.parent / "data" / "samples"

    # embeddings
    embedding_model: str = Field(
        default=DEFAULT_EMBEDDING_MODEL,
        description="packaged all-MiniLM-L6-v2, any sentence-transformers name/path, "
        "or openai:<model> for an OpenAI embedding model",
    )
    embedding_backend: Literal["auto", "torch", "onnx-int8"] = Field(
        default="auto",
        description="auto: a new store gets onnx-int8, an existing one keeps the backend its recorded model says "
        "(so it opens without a reindex); torch: the model's own vectors (run through a float32 ONNX copy once it "
        "is built); onnx-int8: the model quantized to int8, about 1.9x faster on passages than that. A store "
        "indexed with one asks for `python -m ragkit reindex` before it is searched with the other",
    )
    embedding_batch_size: int = Field(default=64, ge=1, le=4096)
    embedding_workers: int = Field(
        default=0, ge=0, le=256, description="ONNX encoders (the float32 copy, onnx-int8): batches of texts encoded "
        "at once, each on one CPU thread; 0: one per CPU core. Measured on 2 shared cores: the same passages for "
        "about 30% less CPU time than one batch spread over both cores, and questions twice as fast under load")

    # ingest limits
    max_upload_mb: float = Field(default=50.0, gt=0)
    max_unpacked_mb: float = Field(
        default=100.0, gt=0, description="largest uncompressed content of a file: the parts of a DOCX, a PDF's streams"
    )
    ocr: bool = Field(default=True, description="read images and PDF pages without a text layer by OCR")
    ocr_max_pages: int = Field(default=100, ge=1, le=10_000, description="scanned pages of one PDF read by OCR")

    # web pages
    url_timeout_s: float = Field(default=20.0, gt=0, le=600, description="longest wait for a web page, in all")
    url_max_mb: float = Field(default=10.0, gt=0, description="largest web page fetched")
    url_allow_private: bool = Field(
        default=False, description="fetch pages from loopback, private and link-local addresses (an intranet)")

    chunk_tokens: int = Field(default=256, ge=32, le=4096)
    chunk_overlap_tokens: int = Field(default=48, ge=0)

    # retrieval
    top_k: int = Field(default=5, ge=1, le=100)
    candidate_k: int = Field(default=50, ge=1, le=1000)
    dense_weight_latin: float = Field(default=0.5, ge=0, le=1)
    dense_weight_cjk: float = Field(default=0.1, ge=0, le=1)
    fusion: Literal["zscore", "minmax"] = Field(
        default="zscore", description="how BM25 and dense scores are put on one scale before they are weighted")
    dense_topicless: float = Field(
        default=0.5, ge=0, le=1, description="the vector search: the share of the query's vector taken from the "
        "query without the knowledge base's topic words (topic.topic_words: 'Notre Dame' in a base about Notre "
        "Dame, which every question names and every passage resembles); 0: the query as asked. Costs one more "
        "short embedding where a question names topic words (the reranker's rerank_topicless_cosine reuses it): "
        "about 1.1 ms CPU a search (6.0 -> 7.1 ms with the reranker's parts). Shared English set (eval), hit@1 / "
        "hit@5 / MRR@10: 0.874 / 0.981 / 0.918 -> 0.896 / 0.989 / 0.937 alone, 0.900 / 0.989 / 0.940 with the "
        "reranker's; every split half of the questions as good or better (scripts/rerank_replay.py compare); "
        "cmrc2018_trial and multihop unchanged (no topic words)")
    neighbour_backing_latin: float = Field(
        default=0.0, ge=0, le=1, description="BM25, for a question in a Latin script: how much a passage's "
        "neighbours in its document back the query words it lacks (a chunk of facts under the chunk naming their "
        "subject); off: on squad it cost hit@1 0.863 -> 0.859 and hit@5 0.981 -> 0.978")
    neighbour_backing_cjk: float = Field(
        default=0.4, ge=0, le=1, description="neighbour_backing_latin for a question in Chinese: cmrc2018_trial "
        "hit@1 0.974 -> 0.978, MRR@10 0.983 -> 0.986; chosen split-half on both shared sets (halves chose 0.3-0.7)")
    parent_passages: int = Field(
        default=0, ge=0, le=5, description="answers read each found passage with this many neighbours on each side "
        "(its parent); citations still quote the sentences used")
    multi_query: bool = Field(
        default=False, description="also search offline variants of the question (its rarer words, its names) "
        "and fuse the rankings by reciprocal rank")
    reranker: str = Field(
        default="auto", description="auto: sentences on a knowledge base that stores its sentence vectors (made "
        "at ingest since version 7 of the catalog), none on an older one until `reindex`; none; sentences "
        "(offline: each candidate's best sentence, by the share of the query's words it holds plus its "
        "similarity to the query); or the directory of a local sentence-transformers CrossEncoder")
    rerank_depth: int = Field(
        default=5, ge=2, le=200, description="how many of the best candidates are reranked: 5, as many as a search "
        "returns by default (top_k), so reranking orders them and never changes which passages it returns")
    rerank_weight: float = Field(
        default=1.0, ge=0, le=10, description="the sentences reranker: how much a candidate's best sentence "
        "counts beside its fused score (both as standard scores over the reranked candidates), for a question in "
        "a Latin script. With rerank_kind_bonus, shared English set hit@1 / MRR@10: 0.75 0.866 / 0.915, 0.9 0.870 "
        "/ 0.916, 1.0 0.874 / 0.918, 1.25 0.874 / 0.919")
    rerank_weight_cjk: float = Field(
        default=0.0, ge=0, le=10, description="rerank_weight for a question in Chinese (the packaged model is "
        "English): on cmrc2018_trial the sentences reranker moved hit@1 from 0.965 to 0.961 (its word share "
        "alone too), so it leaves such questions' order alone")
    rerank_kind_bonus: float = Field(
        default=0.1, ge=0, le=1, description="the sentences reranker: added to a sentence's score when it holds a "
        "thing of the kind the question asks for (a date, a number, a person, a place: answer_types) that the "
        "question does not name. Shared English set, weight 1.0: hit@1 / MRR@10 0.866 / 0.914 -> 0.874 / 0.918 "
        "(each half of the questions as good or better); any bonus from 0.05 to 0.3 gave the same")
    rerank_topicless_cosine: float = Field(
        default=0.5, ge=0, le=1, description="the sentences reranker: the share of a sentence's cosine taken with "
        "the question without the knowledge base's topic words (topic.topic_words, as the grade does: 'Notre Dame' "
        "in a base about Notre Dame, which every question names and every sentence resembles); the rest with the "
        "whole question (the embedding dense_topicless makes, reused). Shared English set (eval), hit@1 / MRR@10: "
        "0.874 / 0.918 -> 0.881 / 0.925 alone; 0.900 / 0.939 -> 0.900 / 0.940 beside dense_topicless and "
        "rerank_year_ranges. Replayed with rerank_year_ranges, by share: 0 0.877 / 0.921, 0.25 0.885 / 0.927, "
        "0.5 0.885 / 0.927, 0.75 0.889 / 0.929, 1 0.881 / 0.926")
    rerank_year_ranges: bool = Field(
        default=True, description="the sentences reranker: a sentence naming a span of years ('from 1946 to 1952') "
        "holds the years inside it that the question names ('in 1947') when its share of the question's words "
        "is counted. Shared English set (eval), hit@1 / MRR@10 0.874 / 0.918 -> 0.877 / 0.921 alone")
    exact_first: bool = Field(
        default=True, description="passages holding every identifier (letters and digits) and quoted phrase of "
        "the query rank first")
    min_relative_score: float = Field(
        default=0.1, ge=0, le=1, description="answers ignore passages scoring below this share of the best"
    )
    same_document_k: int = Field(
        default=1, ge=0, le=20, description="answers also see this many more passages of the best document"
    )
    linked_document_k: int = Field(
        default=2, ge=0, le=20, description="default mode: answers also see a chain of at most this many linked "
        "passages: the best passage for the question of the first document the best passage names by title, then "
        "of the first one that passage names (never a document already found or one the question names): a "
        "multi-hop question's next documents ('the singer of band X' -> the singer's own document), which hold few "
        "of the question's words. multihop_synthetic --mode default, evidence all found 0.733 -> 0.867 at 1, "
        "0.917 at 2 (en 0.725 -> 0.85 -> 0.925, zh 0.75 -> 0.9 -> 0.9; 5.0 -> 5.3 -> 5.35 passages; answer "
        "contains 0.571 -> 0.595 at both); the shared squad and cmrc sets name no title (unchanged). Agentic mode "
        "follows titles in its own rounds")

    # app access
    app_password: SecretStr | None = Field(
        default=None, description="when set, the app asks for this password before showing anything"
    )
    editors: str = Field(
        default="", description="who may add, edit and delete documents when people log in with an identity "
        "provider: comma-separated e-mail addresses and domains (example.com or @example.com); empty: everyone. "
        "With the password login (no identities) or no login, everyone may")
    login_free_guesses: int = Field(
        default=3, ge=1, le=100, description="wrong passwords one address may try before it must wait between tries"
    )
    login_guesses_per_hour: int = Field(
        default=100, ge=1, le=100_000,
        description="wrong passwords per hour, over all addresses, from addresses that have already guessed wrong",
    )

    # HTTP API (issue 35): /v1 (OpenAI's shapes) and /api beside the app, on its port
    api_keys: SecretStr | None = Field(
        default=None, description="turns the HTTP API on: one or more secrets separated by ';', each followed by "
        "':' and the knowledge bases it may use, by name or id, comma-separated, or '*' for all (a secret alone: "
        "all), e.g. 'key1:Default,Manuals;key2:*'. A secret is at least 16 characters: ASCII letters, digits and "
        "punctuation but ':' ';' ','. Sent as 'Authorization: Bearer <secret>'; never logged or shown. Unset: "
        "the API answers 403 naming this setting")
    api_max_body_kb: int = Field(
        default=1024, ge=1, le=1_048_576, description="largest JSON request body (chat, search), in KiB: a larger "
        "one is refused with 413 before it is read whole (by its Content-Length, else once that much has come)")
    api_max_upload_mb: float = Field(
        default=200.0, gt=0, le=100_000, description="largest upload request (all its files, multipart), in MB; "
        "each file is also held to RAGKIT_MAX_UPLOAD_MB, as on the Documents page")
    api_rate_limit_per_minute: int = Field(
        default=120, ge=0, le=1_000_000, description="requests one API key may make per minute (a burst of as many, "
        "then one every 60/N s); past it 429 with Retry-After. Wrong keys count against the client's address. "
        "0: no limit")
    api_concurrent_turns: int = Field(
        default=2, ge=1, le=64, description="API questions answered at once, on threads of their own; more wait "
        "their turn (the page's questions never wait for them). `bench --api`, 8 clients asking without pause "
        "beside a browser asking on the Chat page (2 cores, offline answers): page p50 x1.1 / x0.99 / x1.14 of "
        "idle at 1 / 2 / 8, API answers 66 / 120 / 88 in the same time. A model server that answers slowly "
        "wants more")
    api_max_waiting_turns: int = Field(
        default=32, ge=0, le=100_000, description="API questions that may wait for an answerer; past that 503 with "
        "Retry-After")
    api_max_messages: int = Field(
        default=200, ge=1, le=100_000, description="most messages a chat request may carry (its last user message "
        "is the question; the earlier turns are its history, of which the last RAGKIT_HISTORY_TURNS are used)")

    # answering
    chat_model: str = "gpt-4o-mini"
    chat_models: str = Field(
        default="",
        description="models to choose from per conversation, comma-separated: model, model@base_url, or "
        "model@base_url|KEY_VARIABLE (the name of the environment variable holding its API key)",
    )
    fallback_models: str = Field(
        default="",
        description="models that take the turn, in order, when the conversation's model fails (unreachable, "
        "server error, timeout, unusable reply), before the extractive answer: comma-separated model ids "
        "(model@host) or entries as in RAGKIT_CHAT_MODELS",
    )
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "RAGKIT_OPENAI_API_KEY")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "RAGKIT_OPENAI_BASE_URL")
    )
    llm_timeout_s: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=1, ge=0, le=10)
    max_answer_tokens: int = Field(default=700, ge=16)
    model_context_tokens: int = Field(
        default=8192, ge=512, description="the model's context window; a smaller one the server reports wins"
    )
    rewrite_timeout_s: float = Field(default=15.0, gt=0, description="a model rewrite slower than this is skipped")
    model_judge: Literal["auto", "on", "off"] = Field(
        default="auto", description="ask the model for rewrites and grades (structured replies, at most one per "
        "turn): auto unless it was found unusable, on always, off never (the offline ones are used)")
    judge_memory_hours: float = Field(
        default=168.0, gt=0, description="how long a model found unusable for structured replies is not asked again "
        "(remembered in the data directory, per model and base URL)")
    context_tokens: int = Field(default=2500, ge=200)
    history_tokens: int = Field(default=1200, ge=0)
    history_turns: int = Field(default=4, ge=0)
    memory_turns: int = Field(
        default=10, ge=1, le=1000, description="past this many turns, the turns older than the last "
        "RAGKIT_HISTORY_TURNS fold into the conversation's running summary")
    memory_tokens: int = Field(default=300, ge=50, le=4000, description="longest running summary, in tokens")
    extractive_chars_cjk: int = Field(
        default=340, ge=20, description="longest offline answer in Chinese, in characters (its mean is far shorter: "
        "further sentences must add to the answer, see extractive.Weights)")
    extractive_chars_latin: int = Field(
        default=240, ge=40, description="longest offline answer in English, in characters (squad --answers "
        "replayed: 0.855 at 197 characters mean; at 340: 0.874 at 271)")
    extractive_chain_chars_latin: int = Field(
        default=340, ge=40, description="English offline answers: a sentence linked with a quote (the next link of "
        "a chain: it speaks of what a quote names) may fill the answer up to this many characters, when more than "
        "extractive_chars_latin (multihop_synthetic English bridges replayed at extractive_chars_latin 240: "
        "0.39 -> 0.54, as at 340)")
    extractive_clause_cuts_latin: bool = Field(
        default=True, description="English offline answers: an over-long sentence is cut at clause borders, not to a "
        "fixed-width window, mid-word (squad --answers replayed at 340: 0.848/308 -> 0.848/300 chars)")
    extractive_pooled_share_latin: float = Field(
        default=0.75, ge=0, le=1, description="English offline answers: share of the similarity of a sentence of the "
        "top passage's document read from its stored vector (pooled at ingest), the rest from the sentence alone")
    extractive_alone_share_latin: float = Field(
        default=0.75, ge=0, le=1, description="English offline answers: the best sentence is quoted alone when no "
        "other's merit (its score without its document's retrieval prior) is this share of its own and no quote is "
        "the next link of a chain (0: never; squad --answers replayed at 240: 0.866 at 212 characters when it also "
        "had to hold a thing of the kind asked, 0.859 at 198 without; the English multihop bridges unchanged)")

    # judging the evidence (calibrated with `python -m ragkit eval --unanswerable` on the shared sets)
    grade_threshold_cjk: float = Field(default=0.48, ge=0, le=1, description="share of a Chinese question's words")
    grade_threshold_latin: float = Field(default=0.54, ge=0, le=1, description="share of an English question's words")
    grade_similarity_threshold: float = Field(
        default=0.575, ge=0, le=1, description="similarity of an English question (without its topic words, "
        "grade_topic_share) to the closest sentence")
    grade_similarity_threshold_whole: float = Field(
        default=0.615, ge=0, le=1, description="grade_similarity_threshold for an English question compared whole: "
        "no word of it is a topic word (a knowledge base with no topic: a mixed one, or one of fewer than "
        "grade_topic_min_passages passages). Cross-validated (scripts/grade_cv.py) when every question was "
        "compared whole; a whole question resembles more sentences, so it needs more")
    grade_topic_share: float = Field(
        default=0.5, ge=0, le=1, description="the similarity of an English question to the closest sentence leaves "
        "out the question's words that at least this share of the passages say (the knowledge base's topic: "
        "'Notre Dame' on the shared English set), which tell no sentence from another; 1 leaves out none "
        "(tried on that set from 0.2 to 0.67: 0.45-0.58 about equal, the thresholds then cross-validated)")
    grade_topic_min_passages: int = Field(
        default=10, ge=1, description="a knowledge base of fewer passages has no topic words (grade_topic_share): "
        "half of a few passages is no topic")
    grade_kinds_latin: tuple[Literal["date", "number", "person", "place"], ...] = Field(
        default=("date", "number", "person", "place"), description="kinds of answer an English question may ask "
        "for that a passage must say near its subject to count as evidence (cross-validated: scripts/grade_cv.py)")
    grade_kinds_cjk: tuple[Literal["date", "number", "person", "place"], ...] = Field(
        default=(), description="the same for Chinese questions (none by default: on the shared set it turned "
        "answerable questions into 'not found' at every threshold)")
    retrieval_retries: int = Field(default=2, ge=0, le=2, description="extra searches when the evidence is weak")

    # agentic mode (issue 16): route, decomposition, hop following, sufficiency per part
    chat_mode: Literal["default", "agentic"] = Field(
        default="default", description="answer mode of new conversations: default (one search, retries when weak) "
        "or agentic (small talk answered directly; comparisons searched per side; hops followed)")
    agentic_rounds: int = Field(default=3, ge=1, le=10, description="agentic mode: most retrieval rounds a question "
                                "takes (a round follows the bridges the previous one found)")
    agentic_bridges: int = Field(default=2, ge=1, le=10, description="agentic mode: most bridges (names that lead "
                                 "to another passage) followed per round")
    agentic_evidence: int = Field(default=8, ge=1, le=50, description="agentic mode: most passages an answer draws on")

    # web search (issue 16, agentic mode only): a self-hosted SearxNG instance's JSON API
    web_search_url: str | None = Field(
        default=None, description="agentic mode: base URL of a SearxNG instance (GET {url}/search?q=...&format=json) "
        "searched when the knowledge base does not answer; unset: no web search")
    web_search_results: int = Field(default=3, ge=1, le=10, description="most web results an answer may draw on")
    web_search_timeout_s: float = Field(default=10.0, gt=0, le=120, description="longest wait for the web search")

    @field_validator("chroma_url", "openai_api_key", "openai_base_url", "app_password", "web_search_url",
                     mode="before")
    @classmethod
    def _blank_is_none(cls, value):
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("chroma_token", mode="before")
    @classmethod
    def _check_chroma_token(cls, value):
        token = value.get_secret_value() if isinstance(value, SecretStr) else value
        if token is None or (isinstance(token, str) and not token.strip()):
            return None
        token = str(token).strip()
        # Chroma's client accepts ASCII letters, digits and punctuation only (no spaces); the
        # message never repeats the token.
        if not all(ch.isascii() and (ch.isalnum() or ch in CHROMA_TOKEN_PUNCTUATION) for ch in token):
            raise ValueError("a Chroma token holds ASCII letters, digits and punctuation only (no spaces or "
                             "other characters)")
        return token

    @field_validator("api_keys", mode="before")
    @classmethod
    def _check_api_keys(cls, value):
        keys = value.get_secret_value() if isinstance(value, SecretStr) else value
        if keys is None or (isinstance(keys, str) and not keys.strip()):
            return None
        parse_api_keys(str(keys))  # ValueError naming the entry, never the secret
        return str(keys).strip()

    @field_validator("web_search_url")
    @classmethod
    def _web_search_is_http(cls, value):
        if value is not None and not value.lower().startswith(("http://", "https://")):
            raise ValueError("give the http(s):// address of a SearxNG instance")
        return value

    @field_validator("database_url", mode="before")
    @classmethod
    def _check_database_url(cls, value):
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        url = str(value).strip()
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in POSTGRES_SCHEMES:
            raise ValueError(f"must be a postgresql://user:password@host:port/database URL, not {redacted_url(url)!r}")
        return "postgresql+psycopg://" + url.split("://", 1)[1]

    @model_validator(mode="after")
    def _token_needs_a_server(self) -> "Settings":
        if self.chroma_token is not None and not self.chroma_url:
            raise ValueError("RAGKIT_CHROMA_TOKEN is set but RAGKIT_CHROMA_URL is not: the token is only sent "
                             "to a Chroma server; set the server's address or remove the token")
        return self

    @model_validator(mode="after")
    def _check_overlap(self) -> "Settings":
        if self.chunk_overlap_tokens >= self.chunk_tokens:
            raise ValueError(
                f"chunk_overlap_tokens ({self.chunk_overlap_tokens}) must be smaller than "
                f"chunk_tokens ({self.chunk_tokens})"
            )
        return self

    @property
    def data_path(self) -> Path:
        """The data directory as an absolute path (created on demand); SettingsError, in one
        line, when it is a file or cannot be created. Not cached: a copy made with another
        ``data_dir`` (``model_copy``) would keep the old path."""
        path = self.data_dir.expanduser().resolve()
        if path.is_dir():
            return path
        if path.exists() or path.is_symlink():
            raise SettingsError(f"RAGKIT_DATA_DIR / --data-dir: {path} is a file, not a folder; "
                                "give the folder that holds (or will hold) the knowledge base")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
            why = f"{blocker} is a file" if blocker else (exc.strerror or type(exc).__name__)
            raise SettingsError(f"RAGKIT_DATA_DIR / --data-dir: cannot create the folder {path}: {why}") from None
        return path

    @property
    def catalog_location(self) -> str | Path:
        """Where the document catalog lives: the database URL, else ``registry.sqlite3`` in the data dir."""
        return self.database_url or self.data_path / "registry.sqlite3"

    @property
    def sessions_location(self) -> str | Path:
        """Where conversations live: the database URL, else ``sessions.sqlite3`` in the data dir."""
        return self.database_url or self.data_path / "sessions.sqlite3"

    @property
    def originals_path(self) -> Path:
        """Where the original files are kept (not created until one is written)."""
        return self.originals_dir.expanduser().resolve() if self.originals_dir else self.data_path / "originals"

    @property
    def llm_enabled(self) -> bool:
        """True when an OpenAI-compatible endpoint is configured."""
        return bool(self.openai_api_key)

    @property
    def max_upload_bytes(self) -> int:
        """Upload size limit in bytes."""
        return int(self.max_upload_mb * 1024 * 1024)

    @property
    def max_unpacked_bytes(self) -> int:
        """Largest total uncompressed size of a DOCX (zip) file, in bytes."""
        return int(self.max_unpacked_mb * 1024 * 1024)


def load_settings(**overrides) -> Settings:
    """Build Settings from the environment plus ``overrides``; raise SettingsError on bad values."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = ".".join(str(part) for part in err["loc"]) or "settings"
            env = f"RAGKIT_{name.upper()}" if name != "settings" else name
            problems.append(f"{env}: {err['msg']}")
        raise SettingsError("invalid configuration: " + "; ".join(problems)) from None

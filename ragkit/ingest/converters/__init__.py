"""One converter per file format, each declaring its suffixes, doc_type and label (see ``ragkit.ingest.registry``)."""

"""The language server: LSP in, the engine's Findings and Diagnoses out (see server.py)."""

# cupti-shim build rules (included by the top-level Makefile). Placeholder.

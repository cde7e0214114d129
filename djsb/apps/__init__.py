"""The bundled application djsb-stream (paper 001 sec. 2.3): its C source and Makefile, shipped in
the package, and where its binary is built (djsb/apps/bundled.py)."""

from djsb.apps.bundled import (
    PROGRAM,
    SOURCE_DIR,
    AppBuildError,
    app_sources,
    apps_dir,
    build_program,
    cache_root,
    source_hash,
)

__all__ = ["PROGRAM", "SOURCE_DIR", "AppBuildError", "app_sources", "apps_dir", "build_program", "cache_root",
           "source_hash"]

"""The audit: statistics of segment datasets computed in one streaming pass (``stats``), written as
JSON, CSV and Markdown (``reports``) and as an HTML page (``html``).
"""

from pipeline._lazy import lazy_exports

__all__ = ["audit", "write_outputs"]
__getattr__, __dir__ = lazy_exports(__name__, {"audit": "stats", "write_outputs": "reports"})

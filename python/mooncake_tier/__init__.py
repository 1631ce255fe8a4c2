"""mooncake-tier's Python package. ``mooncake_tier.store`` is the drop-in for Mooncake's
``mooncake.store`` (MooncakeDistributedStore, ReplicateConfig, ...); see docs/PYTHON.md."""

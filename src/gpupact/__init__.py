"""gpupact: turn scarce GPUs into a resource pool an organisation can make promises about."""

__version__ = "0.1.0"

"""The compute contract: schema (pydantic), loading with line numbers, cross-field links, and
the chapter's rules as findings.

    loaded = load_contract("contract.yaml")          # InputError / ContractInvalid on bad input
    findings = check(loaded.contract, now=...)       # list[Finding]
"""

from gpupact.contract.loader import ContractInvalid, LoadedContract, load_contract, parse_contract
from gpupact.contract.rules import RULES, Finding, Rule, Severity, check
from gpupact.contract.schema import (
    API_VERSION,
    KIND,
    Contract,
    GangScope,
    Job,
    LatencyTier,
    Pool,
    Service,
    Tenant,
    WorkloadClass,
)
from gpupact.contract.units import Sharing

__all__ = [
    "API_VERSION",
    "KIND",
    "RULES",
    "Contract",
    "ContractInvalid",
    "Finding",
    "GangScope",
    "Job",
    "LatencyTier",
    "LoadedContract",
    "Pool",
    "Rule",
    "Service",
    "Severity",
    "Sharing",
    "Tenant",
    "WorkloadClass",
    "check",
    "load_contract",
    "parse_contract",
]

"""The Kueue feature gates the admission engine honours: a leaf module, so the cycle can read
them without importing the state that holds them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FeatureGates:
    """Kueue feature gates the engine honours (defaults of the modelled Kueue version).
    FlavorFungibility, PrioritySortingWithinCohort, FairSharingPreemptWithinNominal and
    FairSharingPrioritizeNonBorrowing are always on; PrioritizePreemptorWorkloads,
    PriorityBoost and ConcurrentAdmission always off."""

    partial_admission: bool = True
    scheduling_equivalence_hashing: bool = True
    flavor_fungibility_preserve_scan_progress: bool = True
    recompute_assignment_upon_preemption_targets_overlap: bool = True

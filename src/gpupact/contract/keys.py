"""gpupact's own label and annotation keys: the contract as it stands on the cluster.

`gpupact compile` writes them, `gpupact diagnose` and `gpupact audit` read them back; both
import them from here, so the writer and the reader cannot drift apart.
"""

from __future__ import annotations

# Labels (every GPU occupant maps to an owner and a cost centre, 43.6).
LABEL_OWNER = "gpupact.io/owner"
LABEL_COST_CENTRE = "gpupact.io/cost-centre"
LABEL_TENANT = "gpupact.io/tenant"
LABEL_CLASS = "gpupact.io/class"
LABEL_POOL = "gpupact.io/pool"
# the usual app label: a Deployment's pods carry their service's name
LABEL_APP = "app.kubernetes.io/name"

# Annotations.
ANNOTATION_OWNER = "gpupact.io/owner"  # the exact owner text (an e-mail is no label value)
ANNOTATION_CONTRACT = "gpupact.io/contract"
ANNOTATION_EXPIRES = "gpupact.io/expires"  # a service's end of life (RFC 3339)
ANNOTATION_MODEL = "gpupact.io/model"
ANNOTATION_SCHEDULE = "gpupact.io/schedule"
# the wall clock of that schedule (IANA name, as a CronJob's spec.timeZone)
ANNOTATION_TIME_ZONE = "gpupact.io/time-zone"
# on a ClusterQueue: the temporary raises in its nominalQuota, and the first one to expire
ANNOTATION_QUOTA_RAISES = "gpupact.io/quota-raises"
ANNOTATION_NEXT_RAISE_EXPIRY = "gpupact.io/next-raise-expiry"

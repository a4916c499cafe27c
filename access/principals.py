"""Register the principal a client certificate speaks for (used by `ca issue-client` and `demo_pki`)."""

from __future__ import annotations

from collections.abc import Iterable

from cryptography import x509
from django.db import transaction
from django.utils import timezone

from access import pki
from access.models import Principal, Role
from registry.models import Site, Zone


@transaction.atomic
def register(
    cert: x509.Certificate,
    name: str,
    role: str,
    *,
    sites: Iterable[str] = (),
    zones: Iterable[int] = (),
    all_sites: bool = False,
    all_zones: bool = False,
) -> Principal:
    """Create or update principal `name` to be identified by `cert` (fingerprint, issuer and serial)."""
    site_objects = list(Site.objects.filter(name__in=list(sites)))
    zone_objects = list(Zone.objects.filter(zone_id__in=list(zones)))
    missing = set(sites) - {site.name for site in site_objects}
    if missing:
        raise ValueError(f"unknown site(s): {', '.join(sorted(missing))}")
    missing_zones = set(zones) - {zone.zone_id for zone in zone_objects}
    if missing_zones:
        raise ValueError(f"unknown zone(s): {', '.join(str(z) for z in sorted(missing_zones))}")
    principal, _ = Principal.objects.update_or_create(
        name=name,
        defaults={
            "role": Role(role),
            "cert_sha256": pki.fingerprint(cert),
            "cert_issuer": pki.issuer_dn(cert),
            "cert_serial": pki.serial_hex(cert),
            "all_sites": all_sites,
            "all_zones": all_zones,
            "revoked_at": None,
        },
    )
    principal.full_clean()
    principal.sites.set(site_objects)
    principal.zones.set(zone_objects)
    return principal


def mark_revoked(fingerprints: Iterable[str]) -> int:
    """Set revoked_at on the principals these certificates identify (the instant kill switch)."""
    return Principal.objects.filter(cert_sha256__in=list(fingerprints), revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )

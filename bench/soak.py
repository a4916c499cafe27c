"""A randomized concurrency soak of the operations engine (issue 12): a seeded random walk.

Five sites, each with a router served by a real simulator on 127.0.0.1, and two worker threads
(bench/soak_cast.py has the cast). Three sites are iFCP (McData Eclipse and Nishan IPS 3000, over
telnet) with five devices: two shareable; two of one owner in one zone, and one of that zone owned by
another site, so two sites hold each other's devices through the same links. Two sites are FCIP
(Brocade FOS and Cisco MDS, over SSH, carrying other hosts' production zoning) with hosts of their own
and three devices of one zone, so their one shared link's zoning grows and shrinks with the grants.
Every step submits a few random requests (add with or without a lease, over FCIP for some or all of
the site's hosts, a repeated add that renews, remove, a lease made due and expired by the lease chore,
a V1 addifcp/rmifcp/lsifcp, a registry edit of a site's router port) and runs them at once on the two
workers, so operations for one device or one router race; some steps arm the simulators' fault knobs
(a lost reply, a dropped connection, a silent command, a refused login...), some take a router down for
the whole step (every login refused), some have the FCIP switch's other admin change the production
zoning first or hold the fabric's zoning (an open FOS transaction, an MDS enhanced-mode lock) while the
step runs, and some kill a worker (an operation claimed and abandoned, or a child process running it
SIGKILLed mid-operation), which the stalled-operation reaper hands back to a worker. Outcomes may be
failed or rolled back; what must hold after every step, and at the end, is checked (`check_invariants`):

(a) registry == routers: reconcile reports nothing missing, extra, mismatched or in flight, and each
    router lists exactly the links the registry has `up`;
(b) a device that is not shareable is locked by one site at most, and an exclusive lock has no other;
(c) every `up` link has a holder: a lock on a device of its zone between its two sites (the link's
    site and its device's owner), held by either of them;
(d) every lock in force has an `up` link of its device's zone between its site and the device's owner,
    made for either of them (a lapsed one needs nothing and waits for the lease sweep);
(e) no lock in force is left without a live (queued/running) operation or an up link;
(f) a registry edit of a value live links were made with is refused (`in_use`) exactly while the
    site holds, or is held, through them; otherwise it is saved;
(g) each router lists up exactly the links the grants need: `operations.desired.desired_links`, the
    pure function of the grants (the locks) and the registry; each FCIP link zones exactly the union
    of its grants' (initiator, target) pairs, and its record says so;
(h) the FCIP switches' zoning that flexzone did not create is exactly what their other admin made it;
(i) each zoning change flexzone journaled (its before- and after-images) left the configuration in
    force and every zone in force that flexzone did not create as they were;
(j) the ledger (sealed every step) verifies whole, every LEDGER_EVERY steps and at the end;
(k) no router ever had more of flexzone's sessions open at once than its session budget (the peak the
    simulator saw of flexzone's account, whichever processes held them).

The walk's choices depend only on the seed, never on outcomes, so a seed replays the same requests,
faults and kills (which operation wins a race may still differ). A violation raises AssertionError
with the seed, the step and the step log. Quick variant: tests/bench/test_soak.py (`make test`);
long one: `python -m bench soak --minutes N [--seed S]`, on a temporary database of its own
(`--db-restarts`: on a cluster of its own, restarted at random moments; bench/soak_restarts.py). The cast
is named `soak-<tag>-*` and removed at the end with its journal rows, so the soak may also run on a
database that holds other data (the tests' own).
"""

from __future__ import annotations

import random
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import Q
from django.test.utils import override_settings
from django.utils import timezone

from bench import soak_restarts
from bench.soak_cast import PLATFORMS, Cast, build_cast, remove_cast, stop_simulators, unused_prefix
from bench.soak_checks import (
    LIVE,
    holders_linked,
    images_change_only_ours,
    journal_lines,
    ledger_whole,
    locks_exclusive,
    others_zoning_untouched,
    raise_on,
    registry_matches_routers,
    routers_carry_the_grants,
    sessions_within_budget,
    up_links_held,
)
from bench.soak_restarts import SHARE, Restarts
from bench.soak_workers import SOAK_SETTINGS, execute_all
from operations import ledger
from operations.chores import expire_leases, settle_stranded_links
from operations.errors import DeviceBusy
from operations.intake import submit
from operations.models import Grant, LedgerEntry, Link, Operation, ZoningImage
from operations.planner import PlanError
from operations.pool import pool
from operations.runner import invoke
from operations.threads import stop_router_threads
from registry.models import Device, Site
from simulators.admin import foreign_zoning

# Fault kinds of simulators/faults.py, weighted; each armed for one or two firings.
FAULTS = (
    ("drop_after_apply", 4),  # a lost reply: the change took effect
    ("drop_before_apply", 3),
    ("stall_command", 2),
    ("garble", 2),
    ("refuse_login", 1),
    ("session_limit", 1),
)
ACTIONS = (("add", 6), ("remove", 4), ("expire", 2), ("invoke", 3), ("zone", 1), ("edit", 1), ("fcip", 3))
HOLD_SECONDS = (0.3, 1.5)  # how long the other admin keeps the fabric's zoning in a step that holds it
LEASES = (None, None, None, 600, 3600, 1)  # a 1 s lease runs out by itself and is found by a later expiry
LEASE_MARGIN = 3.0  # s: a lease running out this soon after a step is waited for before the settle
OUTAGE = 1000  # refused logins armed for a whole step: the router is down until the step ends
LEDGER_EVERY = 25  # steps between full verifications of the ledger (it is sealed every step)


# --- the walk ----------------------------------------------------------------------------------


@dataclass
class Step:
    """One step's requests: (what, submit) in order, the faults to arm, which request to kill and how."""

    number: int
    requests: list[tuple[str, Callable[[], list[int]]]] = field(default_factory=list)
    faults: list[tuple[int, str, int]] = field(default_factory=list)  # (router index, kind, count)
    kill: tuple[int, str, float] | None = None  # (request index, "claim" | "process", delay s)
    expire: tuple[int, int] | None = None  # (site index, device index) whose lease is made due
    admin_change: int | None = None  # FCIP router index whose other admin changes zoning first
    hold: tuple[int, float] | None = None  # (FCIP router index, seconds) its other admin holds the zoning


class Soak:
    def __init__(self, seed: int, cast: Cast, out: Callable[[str], None], restart_share: float = SHARE) -> None:
        self.seed, self.cast, self.out = seed, cast, out
        self.rng = random.Random(seed)
        self.log: list[str] = []
        self.ops: list[int] = []  # every operation the walk submitted (the checks' reconciles apart)
        self.refused: Counter[str] = Counter()
        self.faults_armed: Counter[str] = Counter()
        self.faults_fired: Counter[str] = Counter()
        self.kills: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.problems: list[str] = []  # what the walk itself saw go wrong (reported with the invariants)
        self.checks = self.last_image = 0
        self.admin_zones = 0  # the other admins' own zones so far (each name new)
        self.foreign = {index: foreign_zoning(cast.sims[index]) for index in cast.admins}
        self.restarts = Restarts(seed, soak_restarts.CLUSTER, restart_share)

    # Choosing: only the seed decides (never an outcome), so a seed replays the same walk.

    def choose(self, number: int) -> Step:
        step = Step(number)
        for _ in range(self.rng.choice((1, 2, 3, 3, 4))):
            kind = self.rng.choices([k for k, _ in ACTIONS], [w for _, w in ACTIONS])[0]
            step.requests.append(getattr(self, f"_choose_{kind}")(step))
        routers = len(PLATFORMS)
        if self.rng.random() < 0.5:
            for _ in range(self.rng.choice((1, 1, 2))):
                kind = self.rng.choices([k for k, _ in FAULTS], [w for _, w in FAULTS])[0]
                step.faults.append((self.rng.randrange(routers), kind, self.rng.choice((1, 1, 2))))
        if self.rng.random() < 0.06:
            step.faults.append((self.rng.randrange(routers), "refuse_login", OUTAGE))  # a router down for the step
        admins = sorted(self.cast.admins)
        if self.rng.random() < 0.08:
            step.admin_change = self.rng.choice(admins)
        if self.rng.random() < 0.1:
            index = self.rng.choice(admins)
            if self.cast.platform(index) == "brocade_fos" or self.cast.enhanced:  # basic mode has no lock
                step.hold = (index, self.rng.uniform(*HOLD_SECONDS))
                # The admin's own session must end its edit: no fault on that switch this step.
                step.faults = [fault for fault in step.faults if fault[0] != index]
        if self.rng.random() < 0.12:
            how = self.rng.choice(("claim", "claim", "process"))
            step.kill = (self.rng.randrange(len(step.requests)), how, self.rng.uniform(0.0, 0.6))
        return step

    def _pair(self, devices: list[Device] | None = None) -> tuple[Site, Device]:
        """A site and a device it does not own (the planner refuses connecting a site to its own), both
        iFCP or both FCIP."""
        device = self.rng.choice(devices or self.cast.devices)
        owner = next(i for i, s in enumerate(self.cast.sites) if s.pk == device.owner_site_id)
        site = self.rng.choice([s for i, s in enumerate(self.cast.sites)
                                if i != owner and self.cast.fcip(i) == self.cast.fcip(owner)])
        return site, device

    def _choose_add(self, _step: Step, devices: list[Device] | None = None) -> tuple[str, Callable[[], list[int]]]:
        site, device = self._pair(devices)
        lease = self.rng.choice(LEASES)
        request: dict[str, Any] = {"site": site.name, "device_description": device.description,
                   **({"duration": lease} if lease else {})}
        hosts = self.cast.hosts.get(self.cast.sites.index(site))
        if hosts and self.rng.random() < 0.6:  # over FCIP: some of the site's hosts, else all of them
            request["hosts"] = self.rng.sample(hosts, self.rng.randint(1, len(hosts)))
        what = f"add {site.name} {device.description} lease={lease}"
        if "hosts" in request:
            what += f" hosts={','.join(request['hosts'])}"
        return what, lambda: [submit("add", request, enqueue=False).pk]

    def _choose_fcip(self, step: Step) -> tuple[str, Callable[[], list[int]]]:
        """An add or a remove on the FCIP sites' shared link."""
        devices = [d for d in self.cast.devices if self.cast.fcip(self.cast.site_index(d.owner_site_id))]
        if self.rng.random() < 0.6:
            return self._choose_add(step, devices)
        return self._choose_remove(step, devices)

    def _choose_remove(self, _step: Step, devices: list[Device] | None = None) -> tuple[str, Callable[[], list[int]]]:
        site, device = self._pair(devices)
        request = {"site": site.name, "device_description": device.description}
        return f"remove {site.name} {device.description}", lambda: [submit("remove", request, enqueue=False).pk]

    def _choose_zone(self, _step: Step) -> tuple[str, Callable[[], list[int]]]:
        choices = []  # (zone, site): a site of the zone's kind (iFCP or FCIP) and a device of it owned by another
        for zone in self.cast.zones:
            owners = {self.cast.site_index(d.owner_site_id) for d in self.cast.devices if d.zone_id == zone.pk}
            choices += [(zone, site) for i, site in enumerate(self.cast.sites)
                        if owners - {i} and all(self.cast.fcip(i) == self.cast.fcip(o) for o in owners)]
        zone, site = self.rng.choice(choices)
        kind = self.rng.choice(("add", "remove"))
        request = {"site": site.name, "zone": zone.zone_id}
        return f"{kind} {site.name} zone {zone.zone_id}", lambda: [submit(kind, request, enqueue=False).pk]

    def _choose_expire(self, step: Step) -> tuple[str, Callable[[], list[int]]]:
        site, device = self._pair()
        step.expire = (self.cast.sites.index(site), self.cast.devices.index(device))
        return f"expire {site.name} {device.description}", lambda: self._expire(site, device)

    def _choose_invoke(self, _step: Step) -> tuple[str, Callable[[], list[int]]]:
        index = self.rng.choice([i for i in range(len(PLATFORMS)) if not self.cast.fcip(i)])  # V1 is iFCP
        router, site = self.cast.routers[index], self.cast.sites[index]
        remote = self.rng.choice([s for i, s in enumerate(self.cast.sites)
                                  if s.pk != site.pk and not self.cast.fcip(i)])
        zone = self.rng.choice(self.cast.zones)
        command = self.rng.choice(("addifcp", "addifcp", "rmifcp", "rmifcp", "lsifcp"))
        args = (router.name, command, site.router_port, zone.zone_id, remote.data_ip)
        return (f"invoke {command} {router.name} port {site.router_port} zone {zone.zone_id} -> {remote.name}",
                lambda: [invoke(*args, wait=False).pk])

    def _choose_edit(self, _step: Step) -> tuple[str, Callable[[], list[int]]]:
        site = self.rng.choice(self.cast.sites)
        return f"edit {site.name} router_port", lambda: self._edit(site)

    def _edit(self, site: Site) -> list[int]:
        """A registry edit of a value the site's links are made with: refused (in_use) exactly while
        the site holds or is held through live links, saved otherwise; either way no operation."""
        row = Site.objects.get(pk=site.pk)
        held = (Grant.objects.filter(Q(site=row) | Q(device__owner_site=row)).exists()
                or Link.active().filter(Q(site=row) | Q(device__owner_site=row) | Q(router__site=row)).exists())
        base = PLATFORMS[self.cast.sites.index(site)][2]
        # iFCP: FC ports 5-7 and 13-15; FCIP: VE port / fcip interface 24-25 and 26-27.
        row.router_port = base if row.router_port != base else base + (2 if base >= 24 else 8)
        try:
            row.full_clean()
        except ValidationError as exc:
            in_use = any(error.code == "in_use" for errors in exc.error_dict.values() for error in errors)
            if not (held and in_use):
                self.problems.append(f"(f) the edit of {site.name}'s router_port was refused ({exc}) while held={held}")
            self.refused["in use"] += 1
            return []
        if held:
            self.problems.append(f"(f) {site.name}'s router_port changed while links it is part of are live")
        row.save()
        site.router_port = row.router_port  # later V1 requests name the port as it is now
        return []

    def _expire(self, site: Site, device: Device) -> list[int]:
        """Make the site's lease on the device due (if it holds one) and run the lease chore."""
        now = timezone.now()
        Grant.objects.filter(site=site, device=device).update(expires_at=now - timedelta(seconds=1))
        foreign = Grant.objects.filter(expires_at__lte=now).exclude(site__in=self.cast.sites)
        if foreign.exists():
            # Other data's leases are due: the chore would submit their removals, which the soak's
            # manual queue would never run. Leave them to the real workers.
            self.skipped["expire (other data has leases due)"] += 1
            return []
        return expire_leases()

    # Running a step.

    def run_step(self, step: Step) -> list[str]:
        lines = [f"step {step.number}:"]
        if step.admin_change is not None:
            lines.append(self._admin_changes_zoning(step.admin_change))
        if any(count == OUTAGE for _index, _kind, count in step.faults):
            pool.close_all()  # sessions already open would not notice the outage
        for router_index, kind, count in step.faults:
            self.cast.sims[router_index].add_fault(kind, count=count)
            if count == OUTAGE:
                self.faults_armed["outage (logins refused for a step)"] += 1
                lines.append(f"  outage: {self.cast.routers[router_index].name} refuses every login this step")
                continue
            self.faults_armed[kind] += count
            lines.append(f"  fault {kind} x{count} on {self.cast.routers[router_index].name}")
        submitted: list[tuple[str, int]] = []
        for what, submit_it in step.requests:
            try:
                ids = submit_it()
            except DeviceBusy as exc:
                self.refused["busy"] += 1
                lines.append(f"  {what}: refused (busy: {exc})")
                continue
            except PlanError as exc:
                self.refused["plan"] += 1
                lines.append(f"  {what}: refused ({exc})")
                continue
            self.ops += ids
            submitted += [(what, pk) for pk in ids]
            lines.append(f"  {what}: operation(s) {', '.join(map(str, ids)) or 'none'}")
        killed = None
        if step.kill and step.kill[0] < len(submitted):
            killed = (submitted[step.kill[0]][1], step.kill[1], step.kill[2])
            lines.append(f"  kill the worker of operation {killed[0]} ({killed[1]})")
        release = self._admin_holds_zoning(step.hold, lines) if step.hold else None
        try:
            with self.restarts.around([pk for _what, pk in submitted], lines, self.problems, allowed=not step.kill):
                self._execute_all([pk for _what, pk in submitted], killed, lines)
        finally:
            if release is not None:
                release.join()
        self._settle_faults(step, lines)
        self._let_short_leases_lapse(lines)
        # The routers answer again: the settle takes off what failed operations and lapsed leases left.
        for pk in settle_stranded_links([router.name for router in self.cast.routers]):
            self.ops.append(pk)
            submitted.append((f"settle {Operation.objects.get(pk=pk).request['router']}", pk))
            self._execute_all([pk], None, lines)
        for what, pk in submitted:
            lines += journal_lines(Operation.objects.get(pk=pk), what)
        return lines

    def _let_short_leases_lapse(self, lines: list[str]) -> None:
        """Let every lease of the cast that runs out within LEASE_MARGIN s run out before the settle (one
        running out after it would differ from the checks' desired state until the next round)."""
        now = timezone.now()
        soon = Grant.objects.filter(site__in=self.cast.sites, expires_at__gt=now, expires_at__lte=now + timedelta(
            seconds=LEASE_MARGIN)).order_by("-expires_at").values_list("expires_at", flat=True).first()
        if soon is not None:  # (logged: the walk's timing is part of what a replay shows)
            time.sleep(max(0.0, (soon - timezone.now()).total_seconds() + 0.05))
            lines.append(f"  waited {(timezone.now() - now).total_seconds():.2f} s for a lease to run out")

    def _settle_faults(self, step: Step, lines: list[str]) -> None:
        """Count the faults that fired and disarm the rest, so that the checks read the routers cleanly."""
        armed: dict[int, Counter[str]] = {}
        for router_index, kind, count in step.faults:
            armed.setdefault(router_index, Counter())[kind] += count
        for router_index, kinds in armed.items():
            sim = self.cast.sims[router_index]
            left: Counter[str] = Counter()
            for fault in sim.faults:
                left[fault.kind] += fault.count or 0
            for kind, count in kinds.items():
                fired = count - left[kind]
                self.faults_fired[kind] += fired
                if fired:
                    lines.append(f"  {kind} fired {fired}x on {self.cast.routers[router_index].name}")
            sim.clear_faults()

    def _execute_all(self, ids: list[int], killed: tuple[int, str, float] | None, lines: list[str]) -> None:
        execute_all(ids, killed, lines, secrets_dir=self.cast.secrets_dir, kills=self.kills, problems=self.problems)

    # The FCIP switches' other admin.

    def _admin_changes_zoning(self, index: int) -> str:
        """The admin adds a zone of their own to the production configuration and puts it in force."""
        admin, name = self.cast.admins[index], self.cast.routers[index].name
        self.admin_zones += 1
        zone, member = f"adm_z{self.admin_zones}", f"10:00:00:90:fa:c7:{self.admin_zones // 256:02x}:" \
                                                   f"{self.admin_zones % 256:02x}"
        if self.cast.platform(index) == "brocade_fos":
            output = admin.fos(f'zonecreate "{zone}", "{member}"') + admin.fos(f'cfgadd "PROD", "{zone}"')
            output += admin.fos_confirmed('cfgenable "PROD"')
            done = "is in effect" in output
        else:
            output = admin.conn.send_config_set([
                f"zone name {zone} vsan 1", f"member pwwn {member}", "zoneset name PROD vsan 1", f"member {zone}",
                "zoneset activate name PROD vsan 1", *(["zone commit vsan 1"] if self.cast.enhanced else [])])
            done = zone in str((self.cast.sims[index].state().running["active"].get("1") or {}).get("zones", {}))
        if not done:
            self.problems.append(f"the other admin of {name} could not put {zone} in force: {output[-300:]}")
        self.foreign[index] = foreign_zoning(self.cast.sims[index])
        return f"  admin of {name}: {zone} added to PROD and put in force"

    def _admin_holds_zoning(self, hold: tuple[int, float], lines: list[str]) -> threading.Thread:
        """The admin opens a zoning edit (FOS transaction, MDS enhanced-mode lock) and drops it after
        `seconds`, while the step's operations run: flexzone must wait for it, never break it."""
        index, seconds = hold
        admin, name = self.cast.admins[index], self.cast.routers[index].name
        lines.append(f"  admin of {name} holds the zoning for {seconds:.2f} s")

        def admin_does(what: Callable[[], None], doing: str) -> None:
            try:
                what()
            except Exception as exc:  # noqa: BLE001 - an unexpected answer, a timeout, a dropped session: all reported
                self.problems.append(f"the other admin of {name} could not {doing}: {exc!r}")

        admin_does(admin.start_edit, "open a zoning edit")
        release = threading.Timer(seconds, admin_does, (admin.abandon_edit, "drop the zoning edit"))
        release.start()
        return release

    # Checking.

    def check_invariants(self, at_end: bool = False) -> list[str]:
        """Every invariant, after all operations of a step have ended; the violations found, as text.
        The ledger is sealed every step and verified every LEDGER_EVERY steps and at the end."""
        problems, self.problems = self.problems, []
        self.checks += 1
        live = Operation.objects.filter(pk__in=self.ops, state__in=LIVE).values_list("pk", "state")
        problems += [f"operation {pk} is still {state} after its step" for pk, state in live]
        problems += registry_matches_routers(self.cast)
        problems += locks_exclusive(self.cast)
        problems += up_links_held(self.cast)
        problems += holders_linked(self.cast)
        problems += routers_carry_the_grants(self.cast)
        problems += others_zoning_untouched(self.cast, self.foreign)
        problems += sessions_within_budget(self.cast)
        found, self.last_image = images_change_only_ours(self.cast, self.last_image)
        problems += found
        if at_end or self.checks % LEDGER_EVERY == 0:
            problems += ledger_whole()
        else:
            ledger.seal()
        return problems

    def summary(self, steps: int, started: float) -> dict[str, Any]:
        ops = Counter(
            f"{kind} {state}" for kind, state in Operation.objects.filter(pk__in=self.ops).values_list("kind", "state")
        )
        return {
            "seed": self.seed, "steps": steps, "seconds": round(time.monotonic() - started, 1),
            "operations": dict(sorted(ops.items())), "refused": dict(self.refused),
            "faults_armed": dict(self.faults_armed), "faults_fired": dict(self.faults_fired),
            "kills": dict(self.kills), "skipped": dict(self.skipped), "database_restarts": self.restarts.done,
            "interrupted_by_restarts": self.restarts.interrupted,
            "zoning_images": ZoningImage.objects.filter(router__in=self.cast.routers).count(),
            "ledger_entries": LedgerEntry.objects.count(),
        }


def run_soak(seed: int, steps: int | None, seconds: float, out: Callable[[str], None] = print, *,
             keep_on_failure: bool = False, restart_share: float = SHARE) -> dict[str, Any]:
    """Walk until `steps` steps are done or `seconds` have passed (checked between steps); returns a
    summary (operations by kind and state, faults armed and fired, kills, steps). Raises AssertionError
    naming the seed, the step and the step log when an invariant breaks (the cast's rows and journal
    are then kept for inspection if `keep_on_failure`; the simulators are stopped). Needs PostgreSQL."""
    if connection.vendor != "postgresql":
        raise RuntimeError("the soak needs PostgreSQL (DATABASE_URL=postgres://...): workers run on threads with "
                           "connections of their own and a killed worker is a child process")
    started = time.monotonic()
    first_operation = (Operation.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    with tempfile.TemporaryDirectory(prefix="flexzone-soak-") as secrets_dir, \
            override_settings(**SOAK_SETTINGS, FLEXZONE_SECRETS_DIR=Path(secrets_dir),
                              FLEXZONE_LEDGER_KEY=Path(secrets_dir) / "ledger-ed25519.pem", FLEXZONE_LEDGER_WITNESS=""):
        cast = Cast(unused_prefix(), Path(secrets_dir))
        done, failed = 0, False
        try:
            build_cast(cast, seed)
            soak = Soak(seed, cast, out, restart_share)
            out(f"soak seed {seed}: {', '.join(s.name for s in cast.sites)}; "
                f"{', '.join(d.description for d in cast.devices)}")
            while (steps is None or done < steps) and time.monotonic() - started < seconds:
                done += 1
                lines = soak.run_step(soak.choose(done))
                soak.log += lines
                out("\n".join(lines))
                raise_on(soak.check_invariants(), seed, done, soak.log)
            raise_on(soak.check_invariants(at_end=True), seed, done, soak.log, at_end=True)
            return soak.summary(done, started)
        except AssertionError:
            failed = True
            raise
        finally:
            stop_router_threads()  # their connections would hold the database
            if failed and keep_on_failure:
                out(f"soak: the cast {cast.prefix}-* and its journal are kept for inspection")
                stop_simulators(cast)
            else:
                remove_cast(cast, first_operation)


def main(argv: list[str]) -> int:
    """`python -m bench soak --minutes N [--seed S] [--steps K] [--quiet] [--keep-on-failure]`: prints each
    step and a summary; exit status 1 when an invariant breaks (the message names the seed to replay)."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to walk (default 1)")
    parser.add_argument("--seed", type=int, default=None, help="replay this seed (default: a random one)")
    parser.add_argument("--steps", type=int, default=None, help="stop after this many steps")
    parser.add_argument("--quiet", action="store_true", help="print the summary only, not every step")
    parser.add_argument("--db-restarts", action="store_true",
                        help="run on a PostgreSQL cluster of the soak's own and restart it at random moments "
                             "(bench/soak_restarts.py; python -m bench makes the cluster)")
    parser.add_argument("--restart-share", type=float, default=SHARE, help=f"of the steps (default {SHARE})")
    parser.add_argument("--keep-on-failure", action="store_true",
                        help="when an invariant breaks, keep the cast's rows and journal (and the temporary database) "
                             "for inspection")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        parser.error("needs PostgreSQL: with SQLite the workers' own connections and a killed worker's recovery "
                     "cannot be exercised")
    if args.minutes <= 0:
        parser.error("--minutes: must be more than 0")
    if args.db_restarts and soak_restarts.CLUSTER is None:
        parser.error("--db-restarts: run as python -m bench soak --db-restarts, which makes the soak's own cluster")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 10**9)
    print(f"soak seed {seed} ({args.minutes:g} min{', replayed' if args.seed else ''})", flush=True)
    out = (lambda _text: None) if args.quiet else (lambda text: print(text, flush=True))
    try:
        summary = run_soak(seed, args.steps, args.minutes * 60, out=out, keep_on_failure=args.keep_on_failure,
                           restart_share=args.restart_share)
    except AssertionError as exc:
        print(str(exc), file=sys.stderr)
        print(f"soak: invariant broken (seed {seed})", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    print(f"soak seed {seed}: {summary['steps']} steps, every invariant held")
    return 0


"""Checks of the monitoring target: the PodMonitor that scrapes the Ray pods and the Grafana
dashboard over the metrics rayweave records."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from kustomize_render import describe, ray_cluster_specs, ray_groups
from pod_templates import pod_templates

DASHBOARD_CONFIGMAP = "rayweave-grafana-dashboard"
# Ray exports a metric recorded as `name` as `ray_name`, counters with `_total`, histograms as
# `_bucket`/`_count`/`_sum` series.
_RAY_EXPORT = re.compile(r"\bray_(rayweave_[a-z_]+?)(?:_total|_bucket|_count|_sum)?\b")


def _matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector (matchLabels, matchExpressions) against a pod's labels."""
    if not selector:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels.get(key) in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def rayweave_metric_names() -> frozenset[str]:
    """The metric names rayweave records (cluster/services/telemetry.py)."""
    from rayweave.cluster.services import telemetry

    return frozenset(
        v
        for k, v in vars(telemetry).items()
        if k.isupper() and isinstance(v, str) and v.startswith("rayweave_")
    )


def monitoring_problems(
    monitoring: Sequence[Mapping[str, Any]], served: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    """The PodMonitor scrapes every Ray pod of every served target, by a port each pod declares,
    and nothing else; the dashboard queries only metrics rayweave records, and all of them."""
    problems: list[str] = []
    monitors = [o for o in monitoring if o.get("kind") == "PodMonitor"]
    if not monitors:
        problems.append("no PodMonitor")
    for monitor in monitors:
        problems.extend(_pod_monitor_problems(monitor, served))
    dashboards = [
        o
        for o in monitoring
        if o.get("kind") == "ConfigMap" and o["metadata"]["name"] == DASHBOARD_CONFIGMAP
    ]
    if len(dashboards) != 1:
        return [*problems, f"expected one ConfigMap {DASHBOARD_CONFIGMAP}"]
    problems.extend(_dashboard_problems(dashboards[0]))
    return problems


def _pod_monitor_problems(
    monitor: Mapping[str, Any], served: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[str]:
    problems: list[str] = []
    where = describe(monitor)
    spec = monitor.get("spec") or {}
    ports = [e.get("port") for e in spec.get("podMetricsEndpoints") or []]
    if not ports or None in ports:
        problems.append(f"{where}: every podMetricsEndpoint needs a named port")
    selector = spec.get("selector") or {}
    for target, objects in served.items():
        for pod in pod_templates(objects):
            if pod.ray_group is None and _matches(selector, pod.labels):
                problems.append(f"{where}: selects {target} {pod.owner} {pod.where}, not a Ray pod")
        for obj in objects:
            for at, cluster in ray_cluster_specs(obj):
                for group_name, group in ray_groups(cluster):
                    label = f"{target} {describe(obj)} {at} group {group_name}"
                    problems.extend(
                        f"{where}: {p}" for p in _scrape_problems(label, group, selector, ports)
                    )
    return problems


def _scrape_problems(
    label: str, group: Mapping[str, Any], selector: Mapping[str, Any], ports: Sequence[Any]
) -> list[str]:
    """One Ray group is selected and declares every scraped port, `metrics` at its export port."""
    template = group.get("template") or {}
    if not _matches(selector, (template.get("metadata") or {}).get("labels") or {}):
        return [f"does not select {label}"]
    declared = {
        q.get("name"): q.get("containerPort")
        for c in (template.get("spec") or {}).get("containers") or []
        for q in c.get("ports") or []
    }
    problems = [f"{label} has no container port {port!r}" for port in ports if port not in declared]
    export = str((group.get("rayStartParams") or {}).get("metrics-export-port", 8080))
    if "metrics" in declared and str(declared["metrics"]) != export:
        problems.append(
            f"{label}: container port metrics {declared['metrics']} "
            f"is not its metrics-export-port {export}"
        )
    return problems


def _dashboard_problems(dashboard_configmap: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    known = rayweave_metric_names()
    queried: set[str] = set()
    for key, text in (dashboard_configmap.get("data") or {}).items():
        try:
            dashboard = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"{DASHBOARD_CONFIGMAP}/{key}: not JSON: {exc}")
            continue
        for panel in dashboard.get("panels") or []:
            for query in panel.get("targets") or []:
                for name in _RAY_EXPORT.findall(str(query.get("expr", ""))):
                    queried.add(name)
                    if name not in known:
                        problems.append(
                            f"{DASHBOARD_CONFIGMAP}/{key} panel {panel.get('title')!r}: "
                            f"rayweave records no metric {name!r}"
                        )
    problems.extend(
        f"{DASHBOARD_CONFIGMAP}: no panel shows {name}" for name in sorted(known - queried)
    )
    return problems

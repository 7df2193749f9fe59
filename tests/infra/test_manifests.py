"""infra/ checked offline: the compose files against the Compose Specification schema (vendored by
check-jsonschema), the Kubernetes manifests against the API schemas (kubernetes-validate, strict), and
the properties the run depends on: ordered starts on health, pinned images, GPUs where GPU configs run,
and a store key only for the roles that need one (none for volunteers)."""

from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from composer_prime.broadcast.store_roles import ROLES

INFRA = Path(__file__).resolve().parents[2] / "infra"
COMPOSE = yaml.safe_load((INFRA / "compose.yaml").read_text())
COMPOSE_GPU = yaml.safe_load((INFRA / "compose.gpu.yaml").read_text())
K8S = {path.name: [doc for doc in yaml.safe_load_all(path.read_text()) if doc] for path in (INFRA / "k8s").glob("*.yaml")}
K8S_VERSION = "1.33.0"
_PINNED = re.compile(r"^[a-z0-9./_-]+:(?!latest$)[A-Za-z0-9._-]+$")


def _compose_schema() -> dict:
    schema = files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json"
    return json.loads(schema.read_text())


@pytest.mark.parametrize("document", [COMPOSE, COMPOSE_GPU], ids=["compose.yaml", "compose.gpu.yaml"])
def test_compose_files_follow_the_compose_specification(document):
    jsonschema.validate(document, _compose_schema())


def test_compose_starts_each_service_once_what_it_needs_is_healthy():
    services = COMPOSE["services"]
    for name, service in services.items():
        for needed, condition in service.get("depends_on", {}).items():
            assert condition["condition"] in ("service_healthy", "service_completed_successfully"), (name, needed)
            if condition["condition"] == "service_healthy":
                assert "healthcheck" in services[needed], f"{name} waits for {needed}, which has no health check"
    assert services["relay"]["depends_on"].keys() >= {"origin", "publisher"}  # the run key and the versions
    assert services["worker"]["depends_on"].keys() >= {"orchestrator", "relay"}


def test_every_image_is_pinned_and_no_tag_is_latest():
    images = [s["image"] for s in COMPOSE["services"].values() if "image" in s]
    images += [s["image"] for s in COMPOSE_GPU["services"].values() if "image" in s]
    images += [c["image"] for docs in K8S.values() for doc in docs for c in _containers(doc)]
    images += [line.split()[1] for path in INFRA.glob("Dockerfile.*") for line in path.read_text().splitlines()
               if line.startswith("FROM ")]
    assert images and all(_PINNED.match(image) for image in images), [i for i in images if not _PINNED.match(i)]


def test_each_process_gets_its_roles_store_key_and_volunteers_none():
    services = COMPOSE["services"]
    sourced = {name: set(re.findall(r"/secrets/(\w+)\.env", " ".join(s.get("entrypoint", []))))
               for name, s in services.items()}
    assert sourced == {"secrets": set(), "s3": set(), "trainer": set(), "publisher": {"publisher"},
                       "origin": {"origin"}, "relay": set(), "orchestrator": {"coordinator", "orchestrator"},
                       "run-public-key": set(), "worker": set()}
    assert all(role in ROLES for roles in sourced.values() for role in roles)
    for name in ("worker", "relay", "trainer"):  # no path to the keys at all
        assert not any("secrets" in str(v) for v in services[name].get("volumes", [])), name
        assert "AWS_" not in json.dumps(services[name])
    assert services["worker"]["volumes"] == ["public:/public:ro"]  # the run key's public half, nothing else of /run
    volunteer = K8S["volunteer.yaml"][0]
    refs = json.dumps(volunteer)
    assert "store-" not in refs and "AWS_" not in refs and volunteer["kind"] == "StatefulSet"
    env_from = {d["metadata"]["name"]: sorted(r["secretRef"]["name"] for c in _containers(d) for r in c.get("envFrom", []))
                for d in K8S["run.yaml"] if d["kind"] == "Deployment"}
    assert env_from == {"s3": [], "trainer": [], "inference": [], "publisher": ["store-publisher"],
                        "origin": ["store-origin"], "relay": [],
                        "orchestrator": ["run-join-token", "store-coordinator", "store-orchestrator"]}


def test_gpu_configs_ask_for_gpus():
    overlay = COMPOSE_GPU["services"]
    for name in ("trainer", "worker"):
        devices = overlay[name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}], name
    assert "configs/worker/gpu.toml" in overlay["worker"]["command"]
    gpu_pods = {doc["metadata"]["name"] for docs in K8S.values() for doc in docs for c in _containers(doc)
                if c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu") == 1}
    assert gpu_pods == {"trainer", "inference", "volunteer"}


@pytest.mark.parametrize("name", ["run.yaml", "volunteer.yaml"])
def test_kubernetes_manifests_validate_strictly(name):
    assert K8S[name]
    for document in K8S[name]:
        kubernetes_validate.validate(document, K8S_VERSION, strict=True)


def test_the_validator_catches_a_broken_manifest():
    broken = json.loads(json.dumps(K8S["volunteer.yaml"][0]))
    broken["spec"]["template"]["spec"]["containers"][0]["resourcez"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"services": {"x": {"depends_on": {"y": {"condition": "when_ready"}}}}}, _compose_schema())


def _containers(doc: dict) -> list[dict]:
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    return pod.get("containers", []) + pod.get("initContainers", [])

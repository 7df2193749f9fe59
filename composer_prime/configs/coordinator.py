"""The coordinator's own settings (a light module: configs import it without the app)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic_config import BaseConfig

# A worker's chosen name (its id adds its key's fingerprint: coordinator/protocol.py). Starting with a letter or
# digit and holding no dot, no name is `.`, `..` or a path.
WORKER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,40}$"


class UploadsConfig(BaseConfig):
    """Upload grants for volunteers, who hold no store credential (coordinator/grants.py)."""

    max_bytes: Annotated[int, Field(ge=1, description="Largest batch a worker may upload.")] = 64 * 2**20
    grant_ttl_s: Annotated[int, Field(ge=1, le=7 * 86400, description="Seconds an upload grant stays valid.")] = 300
    grants_per_hour: Annotated[int, Field(ge=1, description="Upload grants one worker may get in any hour.")] = 600


class AssignmentsConfig(BaseConfig):
    """Every batch a worker uploads answers one assignment: the examples it samples and the key of its sampling
    noise (coordinator/assign.py), so its tokens can be proven sampled (verify/sampled.py)."""

    ttl_s: Annotated[int, Field(ge=10, le=7 * 86400, description="Seconds a worker has to sample and upload an "
                                                                 "assigned batch.")] = 3600
    max_open: Annotated[int, Field(ge=1, description="Assignments one worker may sample at once (not yet granted an "
                                                     "upload); one left unanswered past its time counts its "
                                                     "samples as failures (`abandoned`).")] = 2
    per_hour: Annotated[int, Field(ge=1, description="Assignments one worker may get in any hour.")] = 600


class AdmissionConfig(BaseConfig):
    """Limits on POST /join, so joins cannot flood the registry or the coordinator."""

    new_workers_per_hour: Annotated[int, Field(ge=1, description="New worker identities admitted in any hour, "
                                                                 "all hosts together.")] = 120
    joins_per_host_per_minute: Annotated[int, Field(ge=1, description="Join requests one client address may make in "
                                                                      "any minute.")] = 12

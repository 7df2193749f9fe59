"""The coordinator's own settings (a light module: configs import it without the app)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from pydantic_config import BaseConfig


class UploadsConfig(BaseConfig):
    """Upload grants for volunteers, who hold no store credential (coordinator/grants.py)."""

    max_bytes: Annotated[int, Field(ge=1, description="Largest batch a worker may upload.")] = 64 * 2**20
    grant_ttl_s: Annotated[int, Field(ge=1, le=7 * 86400, description="Seconds an upload grant stays valid.")] = 300
    grants_per_hour: Annotated[int, Field(ge=1, description="Upload grants one worker may get in any hour.")] = 600

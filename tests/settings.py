"""The config every test app starts from: testing mode, its own database, and rate limits the suite's bursts fit.

The limiter stays on (its database storage runs in every test); tests of the limits pass their own.
"""
from backend.api.limits import DEFAULT_RATE_LIMITS

GENEROUS_RATE_LIMITS = {name: "100000 per minute" for name in DEFAULT_RATE_LIMITS}


def app_config(database_url: str, **overrides) -> dict:
    return {"TESTING": True, "DATABASE_URL": database_url, "RATE_LIMITS": GENEROUS_RATE_LIMITS, **overrides}

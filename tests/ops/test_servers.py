"""The test servers' helpers keep parallel test processes apart (pytest-xdist workers)."""

import redis

from tests.ops.servers import REDIS_URL, redis_broker


def _claims() -> redis.Redis:
    return redis.Redis.from_url(f"{REDIS_URL.rstrip('/')}/0")


def test_brokers_open_at_once_get_different_redis_databases_and_release_them():
    with redis_broker() as first, redis_broker() as second:
        numbers = {int(first.rsplit("/", 1)[1]), int(second.rsplit("/", 1)[1])}
        assert len(numbers) == 2 and numbers <= set(range(1, 16))
        assert all(_claims().exists(f"deid-tests:broker-db:{n}") for n in numbers)
        # A key written through one broker is not visible through the other.
        redis.Redis.from_url(first).set("probe", "1")
        assert not redis.Redis.from_url(second).exists("probe")
    assert not any(_claims().get(f"deid-tests:broker-db:{n}") for n in numbers)


def test_a_database_claimed_by_another_process_is_not_taken():
    # Another process holds a claim (here: written directly) on the lowest free number.
    claims = _claims()
    taken = next(n for n in range(1, 16) if claims.set(f"deid-tests:broker-db:{n}", "other", nx=True, ex=60))
    try:
        with redis_broker() as url:
            assert int(url.rsplit("/", 1)[1]) != taken
        assert claims.get(f"deid-tests:broker-db:{taken}") == b"other"  # left alone
    finally:
        claims.delete(f"deid-tests:broker-db:{taken}")

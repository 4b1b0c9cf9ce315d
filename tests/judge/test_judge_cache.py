import threading

from littlekit.judge.backends import Completion
from littlekit.judge.cache import JudgeCache

KEY = ("v1", "model-a", "a" * 64)


def test_put_get_and_key_parts(tmp_path):
    with JudgeCache(tmp_path / "cache.sqlite") as cache:
        assert cache.get(KEY) is None
        cache.put(KEY, Completion('{"band": "K5"}', 120, 9))
        assert cache.get(KEY) == Completion('{"band": "K5"}', 120, 9)
        assert cache.get(("v2", "model-a", "a" * 64)) is None  # another prompt version
        assert cache.get(("v1", "model-b", "a" * 64)) is None  # another model
        assert cache.get(("v1", "model-a", "b" * 64)) is None  # another text
        assert len(cache) == 1


def test_answers_survive_reopening(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    with JudgeCache(path) as cache:
        other = ("v1", "model-a", "c" * 64)
        cache.put_many([(KEY, Completion("K8", 10, 1)), (other, Completion("K5", 11, 1))])
    with JudgeCache(path) as cache:
        assert len(cache) == 2
        assert cache.get_many([KEY, ("x", "y", "z")]) == {KEY: Completion("K8", 10, 1)}


def test_concurrent_writers_lose_nothing(tmp_path):
    cache = JudgeCache(tmp_path / "cache.sqlite")

    def write(worker: int) -> None:
        for i in range(50):
            cache.put((f"v{worker}", "m", f"{i:064d}"), Completion(f"answer {worker} {i}", i, 1))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 300
    assert cache.get(("v3", "m", f"{7:064d}")).text == "answer 3 7"
    cache.close()


def test_two_connections_share_one_file(tmp_path):
    path = tmp_path / "cache.sqlite"
    first, second = JudgeCache(path), JudgeCache(path)
    first.put(KEY, Completion("K12", 5, 2))
    assert second.get(KEY) == Completion("K12", 5, 2)
    first.close()
    second.close()

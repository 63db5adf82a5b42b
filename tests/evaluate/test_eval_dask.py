"""Scale-out through a Dask cluster's executor (skipped when dask/distributed are missing)."""

from __future__ import annotations

import pytest

distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")

import pandas as pd  # noqa: E402

from fakes import FakeOpenAIServer, Reply  # noqa: E402
from memorylab import LiteLLMSummarizer  # noqa: E402
from memorylab.evaluate import BASELINES, Case, Fact, compare_summarizers  # noqa: E402

HISTORY = (
    {"role": "user", "content": "Config at /srv/api/config.yaml."},
    {"role": "assistant", "content": "Staging listens on port 8443."},
)
CASES = [Case(f"c{i}", (*HISTORY, {"role": "user", "content": f"ticket {i}"}),
              (Fact("f1", "path", "/srv/api/config.yaml", 0),)) for i in range(4)]  # fmt: skip


def test_local_dask_cluster_executor(tmp_path: object) -> None:
    with (
        distributed.LocalCluster(n_workers=2, processes=False, dashboard_address="127.0.0.1:0") as cluster,
        distributed.Client(cluster) as client,
        FakeOpenAIServer(Reply("config /srv/api/config.yaml")) as server,
    ):
        # 60 s: a hang guard a loaded machine's local replies never reach (5 s was reached).
        model = LiteLLMSummarizer("openai/fake", retries=0, timeout=60,
                                  llm_args={"api_base": server.base_url, "api_key": "x"})  # fmt: skip
        specs = {**{name: name for name in BASELINES}, "model": model}
        local = compare_summarizers(CASES, specs, ["compression", "fact_recall"],
                                    cache_dir=tmp_path, progress=False)  # fmt: skip
        assert server.request_count == 4
        spread = compare_summarizers(CASES, specs, ["compression", "fact_recall"],
                                     cache_dir=tmp_path, progress=False,
                                     executor=client.get_executor())  # fmt: skip
        assert server.request_count == 4  # the jobs read the shared on-disk cache
        assert spread.run["cache_hits"] == 4
    pd.testing.assert_frame_equal(local.frame, spread.frame)

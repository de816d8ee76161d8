/**
 * The reward function module verl loads with `custom_reward_function.path` (verl/trainer/ppo/
 * reward.py, get_custom_reward_fn: `load_extern_object(path, name)`). Python's standard library
 * only. It sends what verl gives a reward function — the decoded response (`solution_str`) and
 * the row the exporter put in `extra_info.row` — to serve-tools' reward endpoint and returns the
 * config's own rewards: `score` (outcome + process, what verl trains on) and, as reward extra
 * info that verl dumps into `rollout_data_dir`, the parts (`rs_*`) the importer reads back.
 *
 *   compute_score        one trajectory (verl's naive reward manager)
 *   compute_score_batch  a batch at once (`reward_model.reward_manager=batch`, the launch script's
 *                        choice): the agent-r1 combination normalises over it as our trainer does
 */
export function rewardModuleSource(defaultUrl: string): string {
  return `"""Rollout Studio rewards for verl, written by \`rollout-studio export verl\`.

verl calls compute_score (naive reward manager) or compute_score_batch (batch reward manager);
both ask \`rollout-studio serve-tools\` to score the trajectories with the training config's own
rewards. Standard library only.

Environment:
  ROLLOUT_STUDIO_REWARD_URL      the reward endpoint (default: ${defaultUrl})
  ROLLOUT_STUDIO_TOKEN           sent as "Authorization: Bearer <token>" when set
  ROLLOUT_STUDIO_REWARD_TIMEOUT  seconds to wait for an answer (default 600)
"""

import json
import os
import urllib.error
import urllib.request

DEFAULT_URL = ${JSON.stringify(defaultUrl)}


class RolloutStudioRewardError(RuntimeError):
    """The reward endpoint could not be reached or refused the request; the message says why."""


def _row(extra_info):
    row = (extra_info or {}).get("row")
    if row is None:
        raise RolloutStudioRewardError(
            "extra_info.row is missing: the dataset was not written by \`rollout-studio export verl\`"
        )
    return json.loads(row) if isinstance(row, str) else row


def _post(items):
    url = os.environ.get("ROLLOUT_STUDIO_REWARD_URL", DEFAULT_URL)
    headers = {"content-type": "application/json"}
    token = os.environ.get("ROLLOUT_STUDIO_TOKEN")
    if token:
        headers["authorization"] = "Bearer " + token
    request = urllib.request.Request(url, data=json.dumps({"items": items}).encode("utf-8"), headers=headers, method="POST")
    timeout = float(os.environ.get("ROLLOUT_STUDIO_REWARD_TIMEOUT", "600"))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        detail = error.read().decode("utf-8", "replace")
        try:
            detail = json.loads(detail).get("error", detail)
        except ValueError:
            pass
        raise RolloutStudioRewardError("%s answered %d: %s" % (url, error.code, detail)) from None
    except (urllib.error.URLError, OSError) as error:
        raise RolloutStudioRewardError(
            "cannot reach the reward endpoint %s (%s); is \`rollout-studio serve-tools\` running?" % (url, error)
        ) from None
    results = body.get("results")
    if not isinstance(results, list) or len(results) != len(items):
        raise RolloutStudioRewardError("%s answered without one result per trajectory: %r" % (url, body))
    return results


def _reward(result):
    return {
        "score": float(result["total"]),
        "rs_outcome": float(result["outcome"]),
        "rs_process": float(result["process"]),
        "rs_row_id": str(result["rowId"]),
        "rs_answer": result.get("answer", ""),
        "rs_components": json.dumps(result["components"], sort_keys=True),
        "rs_calls": json.dumps(result["calls"]),
    }


def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    """One trajectory: verl's naive reward manager calls this per response."""
    return _reward(_post([{"row": _row(extra_info), "response": solution_str}])[0])


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, **kwargs):
    """A batch: verl's batch reward manager (reward_model.reward_manager=batch) calls this once per step."""
    items = [{"row": _row(info), "response": text} for text, info in zip(solution_strs, extra_infos)]
    return [_reward(result) for result in _post(items)]
`;
}

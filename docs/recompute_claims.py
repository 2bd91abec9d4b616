#!/usr/bin/env python3
"""A reviewer's check of `addnorm demo`: recompute each claim's statistic from demo.json alone.

    python3 docs/recompute_claims.py runs/docs-demo/demo.json

For every claim with a recipe below, the statistic is recomputed from the per-run records
in demo.json (nothing else is read) and compared with the claim's `estimate.value`. Only
point values are recomputed: the intervals come from the demo's seeded bootstrap (and
Clopper-Pearson for rates), which this script does not replay. Exit status 1 if a recomputed
value disagrees (relative difference above 1e-6); claims without a recipe are listed.
Standard library only.
"""
import json
import math
import sys
from statistics import median


def gm(values):
    """Geometric mean (NaN if any value is not positive)."""
    values = list(values)
    if not values or any(not v > 0 for v in values):
        return float("nan")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def slope(xs, ys):
    """Least-squares slope of ys against xs."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys))
            / sum((x - mx) ** 2 for x in xs))


def loglog_slope(points):
    """Slope of ln y against ln x over (x, y) points."""
    return slope([math.log(x) for x, _ in points], [math.log(y) for _, y in points])


def ranks(v):
    """Average 1-based ranks."""
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def spearman(x, y):
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    return cov / math.sqrt(sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry))


# ── experiment A: Theorem 1 ──────────────────────────────────────────────────────────────

def thm1(d, placement):
    res = [r for r in d["probe"]["results"] if r["placement"] == placement and r["norm"] == "layer"]
    depths = sorted({r["depth"] for r in res})
    return loglog_slope([(L, gm(r["last_ffn_grad_norm"] for r in res if r["depth"] == L))
                         for L in depths])


# ── Fig. 3 ───────────────────────────────────────────────────────────────────────────────

def profile(runs, placement, depth, weight):
    rs = [r for r in runs if r["placement"] == placement and r["depth"] == depth]
    return [gm(r[weight][l] for r in rs) for l in range(len(rs[0][weight]))]


def fig3_grows(runs, depth):
    return min(spearman(list(range(len(p))), [math.log(v) for v in p])
               for p in (profile(runs, "Post", depth, w) for w in ("w_1", "w_2")))


def fig3_spread(runs, depth):
    return max(max(p) / min(p) for p in (profile(runs, "Pre", depth, w) for w in ("w_1", "w_2")))


def fig3_flatter(runs, depth):
    def spread(placement, w):
        p = profile(runs, placement, depth, w)
        return max(p) / min(p)
    return min(spread("Post", w) / spread("Pre", w) for w in ("w_1", "w_2"))


# ── experiment B: training runs ──────────────────────────────────────────────────────────

def runs_of(d, placement, norm, warmup):
    return sorted((r for r in d["runs"] if r["placement"] == placement and r["norm"] == norm
                   and r["warmup"] == warmup), key=lambda r: r["seed"])


def success(r):
    return (not r["diverged"]) and r["final_exact_accuracy"] >= 0.99


def rate(runs):
    return sum(map(success, runs)) / len(runs)


def long_warmup(d):
    return max(d["config"]["warmups"])


def steps_ratio(d, a, b):
    budget = d["config"]["steps"]

    def n(r):
        return r["steps_to_99_exact"] if r["steps_to_99_exact"] is not None and not r["diverged"] else None
    ratios = []
    for ra, rb in zip(runs_of(d, *a), runs_of(d, *b)):
        na, nb = n(ra), n(rb)
        ratios.append(1.0 if na is None and nb is None else (na or budget) / (nb or budget))
    return gm(ratios)


def variance_growth(r):
    rms = r["evaluations"][-1]["residual_rms"]
    return (rms[-1] / rms[0]) ** 2


def spikiness(r, window=10):
    g = r["grad_norms"]
    return max(g[t] / median(g[t - window:t]) for t in range(window, len(g)))


def peri_ratio(d, stat):
    return gm(stat(a) / stat(b) for a, b in zip(runs_of(d, "Pre", "layer", 0),
                                                 runs_of(d, "Peri", "layer", 0)))


# ── Xiong's Fig. 2 grid and App. H ───────────────────────────────────────────────────────

def grid_runs(d, warmup, lr, fixed):
    return sorted((g["run"] for g in d["warmup_grid"] if g["cell"] == {
        "warmup": warmup, "learning_rate": lr, "fixed": fixed}), key=lambda r: r["seed"])


def grid_cells(d):
    g = d["config"]["warmup_grid"]
    long, short = max(g["warmups"]), min(w for w in g["warmups"] if w > 0)
    hi, lo = max(g["learning_rates"]), min(g["learning_rates"])
    return {"none_low": (0, lo, False), "none_high": (0, hi, False), "short_high": (short, hi, False),
            "long_high": (long, hi, False), "fixed": (0, g["fixed_learning_rate"], True)}


def grid_difference(d, a, b):
    cells = grid_cells(d)
    second = {r["seed"]: r for r in grid_runs(d, *cells[b])}
    diffs = [capped(ra) - capped(second[ra["seed"]]) for ra in grid_runs(d, *cells[a]) if ra["seed"] in second]
    return sum(diffs) / len(diffs)


# ── experiment D: DeepNet ────────────────────────────────────────────────────────────────

def first_updates(d, placement):
    rs = [r for r in d["model_update"] if r["placement"] == placement]
    return {N: gm(r["updates"][0] for r in rs if r["depth"] == N) for N in sorted({r["depth"] for r in rs})}


def sgd_updates(d, placement):
    """GM over seeds of ‖ΔF‖/η at the smallest η after one SGD step, by depth."""
    def at_smallest(r):
        k = min(range(len(r["learning_rates"])), key=lambda i: r["learning_rates"][i])
        return r["updates"][k]
    rs = [r for r in d["sgd_update"] if r["placement"] == placement]
    return {N: gm(at_smallest(r) for r in rs if r["depth"] == N) for N in sorted({r["depth"] for r in rs})}


def deepnet_smaller(d):
    post, deep = first_updates(d, "Post"), first_updates(d, "DeepNorm")
    return min(post[N] / deep[N] for N in post)


# ── Lemma 2 ──────────────────────────────────────────────────────────────────────────────

def band_margin(d):
    res = d["lemma_2"]["results"]
    depth = max(r["depth"] for r in res)
    rs = [r for r in res if r["depth"] == depth]
    def u(l):
        v = sum(r["residual_mean_square"][l] for r in rs) / len(rs)
        return (v - 1 - l / 2) / l
    return min(min(u(l), 1 - u(l)) for l in range(1, depth + 1))


# ── experiment C: Wortsman et al.'s proxies ──────────────────────────────────────────────

def proxy_runs(d, variant, lr):
    return sorted((p["run"] for p in d["proxies"] if p["variant"] == variant
                   and p["run"]["learning_rate"] == lr), key=lambda r: r["seed"])


def final_logit(r):
    """Layer 0's largest attention logit at the end (the layer Wortsman et al. plot)."""
    logits = r["evaluations"][-1].get("attention_logits") or []
    return logits[0] if logits else float("nan")


def logit_gm(d, variant, lr):
    return gm(v for v in map(final_logit, proxy_runs(d, variant, lr)) if math.isfinite(v) and v > 0)


def capped(r):
    if r["diverged"] or not math.isfinite(r["final_loss"]):
        return r["initial_loss"]
    return min(r["final_loss"], r["initial_loss"])


def evenness(runs, placement, seeds):
    """min/max over layers of the GM-over-seeds W1 profile of one placement."""
    mine = [r for s in seeds for r in runs if r["seed"] == s and r["placement"] == placement]
    profile = [gm(r["w_1"][l] for r in mine) for l in range(len(mine[0]["w_1"]))]
    return min(profile) / max(profile)


def resi_dual(d):
    runs, seeds = d["figure_3_resi_dual"], d["config"]["figure_3_resi_dual"]["seeds"]
    return evenness(runs, "ResiDual", seeds) / evenness(runs, "Post", seeds)


def early_profile(d, variant):
    runs, seeds = d["early_gradients"], d["config"]["early_gradients"]["seeds"]
    mine = [r for s in seeds for r in runs if r["seed"] == s and r["variant"] == variant]
    return [gm(r["w_2"][l] for r in mine) for l in range(len(mine[0]["w_2"]))]


def normformer_mismatch(d):
    profile = early_profile(d, "baseline")
    return spearman(list(range(1, len(profile) + 1)), [math.log(g) for g in profile])


def normformer_fix(d):
    spread = lambda p: max(p) / min(p)
    return spread(early_profile(d, "baseline")) / spread(early_profile(d, "norm-former"))


def softcap_control(d):
    finals = [max(p["run"]["evaluations"][-1]["attention_logits"]) for p in d["proxies"]
              if p["variant"] == "soft-cap"]
    return max(finals) / d["config"]["proxies"]["softcap"]


def s_of(runs_by_lr):
    """LR sensitivity S (section 2.2) of one configuration against its own best LR."""
    curve = [sum(map(capped, rs)) / len(rs) for rs in runs_by_lr]
    return sum(v - min(curve) for v in curve) / len(curve)


def sensitivity(d, variant):
    """S of a variant where the registry reads it: the grid's largest size if it ran."""
    if d.get("proxy_grid"):
        return grid_s(d, grid_sizes(d)[-1], variant)
    return s_of(proxy_runs(d, variant, lr) for lr in d["config"]["proxies"]["learning_rates"])


def grid_sizes(d):
    return d["config"]["proxy_grid"]["sizes"]


def own_size(d):
    """C's model size, as the grid's sizes spell it."""
    stack = d["config"]["proxies"]["model"]["stack"]
    block = stack.get("block", stack)
    return {"d_model": block["d_model"], "n_layers": block["n_layers"], "n_heads": block["n_heads"]}


def params(size):
    return 12 * size["d_model"] ** 2 * size["n_layers"]


def grid_run_list(d, size, variant, lr):
    return sorted((g["run"] for g in d["proxy_grid"] if g["size"] == size and g["variant"] == variant
                   and g["run"]["learning_rate"] == lr), key=lambda r: r["seed"])


def grid_s(d, size, variant, lrs=None):
    lrs = lrs if lrs is not None else d["config"]["proxies"]["learning_rates"]
    return s_of(grid_run_list(d, size, variant, lr) for lr in lrs)


def size_growth(d, variant):
    sizes = grid_sizes(d)
    return slope([math.log10(params(z)) for z in sizes], [grid_s(d, z, variant) for z in sizes])


def divergence_lr_slope(d):
    lrs = d["config"]["proxies"]["learning_rates"]
    step = lrs[-1] / lrs[-2]
    sizes = grid_sizes(d)
    xs = [math.log10(params(z)) for z in sizes]
    slopes = []
    for i in range(len(d["config"]["proxies"]["seeds"])):
        ys = []
        for z in sizes:
            first = [lr for lr in lrs if grid_run_list(d, z, "baseline", lr)[i]["diverged"]]
            ys.append(math.log(first[0] if first else max(lrs) * step))
        slopes.append(slope(xs, ys))
    return sum(slopes) / len(slopes)


def warmup_by_size(d):
    gain = lambda z: grid_s(d, z, "qk-layernorm") - grid_s(d, z, "long-warmup")
    sizes = grid_sizes(d)
    return gain(sizes[-1]) - gain(sizes[0])


def coupled_decay(d):
    lrs = d["config"]["proxies"]["learning_rates"]
    coupled = [d["config"]["proxy_grid"]["coupled_extra_learning_rate"]] + lrs
    z, w = own_size(d), len(lrs)
    s_coupled = min(grid_s(d, z, "coupled-decay", coupled[:w]), grid_s(d, z, "coupled-decay", coupled[-w:]))
    return s_coupled - grid_s(d, z, "qk-layernorm")


def z_loss_grid(d):
    z = own_size(d)
    return grid_s(d, z, "no-decay") - grid_s(d, z, "no-decay-z-loss")


def peri_divergences(d):
    lrs = [d["config"]["learning_rate"]] + d["config"]["divergence_learning_rates"]

    def count(placement):
        counts = [0] * len(d["config"]["seeds"])
        for lr in lrs:
            runs = runs_of(d, placement, "layer", 0) if lr == d["config"]["learning_rate"] else sorted(
                (r for r in d["divergence_grid"] if r["placement"] == placement and r["learning_rate"] == lr),
                key=lambda r: r["seed"])
            for i, r in enumerate(runs):
                counts[i] += 1 if r["diverged"] else 0
        return counts

    diffs = [a - b for a, b in zip(count("Pre"), count("Peri"))]
    return sum(diffs) / len(diffs)


def cait_layer_scale(d):
    # L*: the deepest depth where Pre-LN alone succeeds in under half of its seeds; the
    # statistic is LayerScale's success rate there (NaN when no depth qualifies).
    grid = d["depth_grid"]

    def cell(depth, scaled):
        return [r["run"] for r in grid
                if r["cell"]["depth"] == depth and r["cell"]["layer_scale"] == scaled]

    failing = [L for L in d["config"]["depth_grid"]["depths"]
               if cell(L, False) and 2 * sum(map(success, cell(L, False))) < len(cell(L, False))]
    return rate(cell(max(failing), True)) if failing else float("nan")


def largest_training_index(d, variant):
    lrs = d["config"]["proxies"]["learning_rates"]
    out = []
    for s in range(len(d["config"]["proxies"]["seeds"])):
        ok = [i for i, lr in enumerate(lrs)
              if (lambda r: not r["diverged"] and r["final_loss"] < r["initial_loss"])(
                  proxy_runs(d, variant, lr)[s])]
        out.append(max(ok) if ok else -1)
    return out


def drift(r):
    return abs(r["evaluations"][-1]["log_z"] - r["evaluations"][0]["log_z"])


def logz_drift(d):
    lr = d["config"]["proxies"]["z_loss_learning_rate"]
    diffs = [drift(a) - drift(b) for a, b in zip(proxy_runs(d, "no-decay", lr),
                                                  proxy_runs(d, "no-decay-z-loss", lr))]
    return sum(diffs) / len(diffs)


def logit_slope(d):
    lrs = d["config"]["proxies"]["learning_rates"]
    return loglog_slope([(lr, logit_gm(d, "baseline", lr)) for lr in lrs])


def logit_ratio(d):
    top = max(d["config"]["proxies"]["learning_rates"])
    return logit_gm(d, "baseline", top) / logit_gm(d, "qk-layernorm", top)


def stable_lr_gain(d):
    gains = [q - b for q, b in zip(largest_training_index(d, "qk-layernorm"),
                                   largest_training_index(d, "baseline"))]
    return sum(gains) / len(gains)


RECIPES = {
    "xiong-lemma2-preln-residual-band": band_margin,
    "wortsman-fig2-logit-grows-with-lr": logit_slope,
    "wortsman-fig2-qkln-bounds-logits": logit_ratio,
    "wortsman-s311-qkln-raises-max-stable-lr": stable_lr_gain,
    "wortsman-fig1-qkln-lowers-sensitivity": lambda d: sensitivity(d, "baseline")
    - sensitivity(d, "qk-layernorm"),
    "wortsman-fig5-warmup-lowers-sensitivity": lambda d: sensitivity(d, "qk-layernorm")
    - sensitivity(d, "long-warmup"),
    "ext-wortsman-fig4-logz-drift": logz_drift,
    "wortsman-fig1-sensitivity-grows-with-size-baseline": lambda d: size_growth(d, "baseline"),
    "wortsman-fig1-sensitivity-grows-with-size-qkln": lambda d: size_growth(d, "qk-layernorm"),
    "wortsman-s311-divergence-lr-falls-with-size": divergence_lr_slope,
    "wortsman-fig5-warmup-effect-larger-for-larger-models": warmup_by_size,
    "wortsman-fig6-independent-decay-lowers-sensitivity": coupled_decay,
    "wortsman-fig3-zloss-lowers-sensitivity": z_loss_grid,
    "periln-divergence-vs-lr": peri_divergences,
    "cait-abstract-layerscale-trains-deeper": cait_layer_scale,
    "residual-abstract-gradient-lower-bound": resi_dual,
    "normformer-abstract-preln-gradient-mismatch": normformer_mismatch,
    "normformer-abstract-fix-balances-gradients": normformer_fix,
    "gemma2-s2-softcap-bounds-logits-at-high-lr": softcap_control,
    "xiong-thm1-postln-flat": lambda d: thm1(d, "Post"),
    "xiong-thm1-preln-inverse-sqrt-depth": lambda d: thm1(d, "Pre"),
    "xiong-fig3-postln-grows": lambda d: fig3_grows(d["figure_3"], 6),
    "xiong-fig3-preln-flat": lambda d: fig3_spread(d["figure_3"], 6),
    "xiong-fig3-preln-flatter-than-postln": lambda d: fig3_flatter(d["figure_3"], 6),
    "xiong-fig3-postln-grows-paper-width": lambda d: fig3_grows(d["figure_3_paper_width"], 6),
    "xiong-fig3-preln-flat-paper-width": lambda d: fig3_spread(d["figure_3_paper_width"], 6),
    **{f"ext-fig3-postln-grows-l{L}": (lambda L: lambda d: fig3_grows(d["figure_3_extension"], L))(L)
       for L in (12, 24, 48)},
    **{f"ext-fig3-preln-flat-l{L}": (lambda L: lambda d: fig3_spread(d["figure_3_extension"], L))(L)
       for L in (12, 24, 48)},
    "xiong-fig2-no-warmup-fails-at-both-lrs": lambda d: rate(grid_runs(d, *grid_cells(d)["none_low"])),
    "xiong-fig2-short-warmup-hurts-at-high-lr": lambda d: grid_difference(d, "short_high", "long_high"),
    "xiong-app-h-small-lr-beats-large-lr-without-warmup": lambda d: grid_difference(d, "none_high", "fixed"),
    "xiong-app-h-small-lr-slower-than-warmup": lambda d: grid_difference(d, "fixed", "long_high"),
    "xiong-s32-postln-fails-without-warmup": lambda d: rate(runs_of(d, "Post", "layer", 0)),
    "xiong-s32-postln-trains-with-warmup": lambda d: rate(runs_of(d, "Post", "layer", long_warmup(d))),
    "xiong-s4-preln-trains-without-warmup": lambda d: rate(runs_of(d, "Pre", "layer", 0)),
    "ext-rmsnorm-trains-without-warmup": lambda d: rate(runs_of(d, "Pre", "rms", 0)),
    "ext-dyt-trains-without-warmup": lambda d: rate(runs_of(d, "Pre", "dyt", 0)),
    "ext-rezero-trains-without-warmup-shallow": lambda d: rate(runs_of(d, "ReZero", "identity", 0)),
    "ext-periln-trains-without-warmup": lambda d: rate(runs_of(d, "Peri", "layer", 0)),
    "control-no-norm-fails": lambda d: rate(runs_of(d, "None", "identity", 0)
                                            + runs_of(d, "None", "identity", long_warmup(d))),
    "xiong-s4-preln-faster-than-postln": lambda d: steps_ratio(
        d, ("Pre", "layer", 0), ("Post", "layer", long_warmup(d))),
    "rezero-converges-faster-than-vanilla": lambda d: steps_ratio(
        d, ("ReZero", "identity", 0), ("Post", "layer", long_warmup(d))),
    "ext-rezero-converges-faster-than-preln": lambda d: steps_ratio(
        d, ("ReZero", "identity", 0), ("Pre", "layer", 0)),
    "periln-abstract-balanced-variance": lambda d: peri_ratio(d, variance_growth),
    "periln-abstract-steadier-gradients": lambda d: peri_ratio(d, spikiness),
    "deepnet-fig5-postln-update-grows": lambda d: loglog_slope(list(first_updates(d, "Post").items())),
    "deepnet-fig5-deepnorm-update-flat-adam": lambda d: loglog_slope(
        list(first_updates(d, "DeepNorm").items())),
    "deepnet-fig5-deepnorm-update-smaller": deepnet_smaller,
    "deepnet-s43-sgd-postln-update-grows": lambda d: loglog_slope(list(sgd_updates(d, "Post").items())),
    "deepnet-s43-sgd-deepnorm-update-bounded": lambda d: loglog_slope(
        list(sgd_updates(d, "DeepNorm").items())),
}


def main(path):
    d = json.load(open(path))
    bad, missing = [], []
    for c in d["claims"]:
        recipe = RECIPES.get(c["id"])
        if recipe is None:
            missing.append(c["id"])
            continue
        ours = recipe(d)
        theirs = c["estimate"]["value"] if c.get("estimate") else float("nan")
        same = math.isclose(ours, theirs, rel_tol=1e-6, abs_tol=1e-9) or (
            math.isnan(ours) and math.isnan(theirs))
        print(f"{'ok  ' if same else 'DIFF'} {c['id']}: recomputed {ours:.6g}, demo {theirs:.6g}")
        if not same:
            bad.append(c["id"])
    print(f"\n{len(d['claims']) - len(missing) - len(bad)} recomputed and equal, {len(bad)} differ, "
          f"{len(missing)} without a recipe here: {', '.join(missing) or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))

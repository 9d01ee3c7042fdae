"""CCPT instances as Inspect samples (the "scenario" step: dataset records → Sample)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from itertools import zip_longest
from pathlib import Path

from inspect_ai.dataset import MemoryDataset, Sample

from ccpt.dataset import Record, TypeItem, instances, load_dataset
from ccpt.spec import OTHERS, TYPE_LABELS, TaskSpec


def _sample(task: TaskSpec, item: Record | TypeItem) -> Sample:
    meta = {"task": task.name, "instance": item.id}
    meta |= {name: getattr(item, name) for name in ("combination", "head", "modifier", "property")}
    if isinstance(item, TypeItem):
        meta["gold_type"] = item.gold
        text = f"Combination: {item.combination}\nProperty: {item.property}"
    elif task.completes_phrase:
        text = f"Head noun: {item.head}\nEmergent property: {item.property}"
    else:
        text = f"Combination: {item.combination}"
    target = item.gold if isinstance(item, TypeItem) else getattr(item, task.gold_field)
    return Sample(id=item.id, input=text, target=target, metadata=meta)


def task_dataset(
    task: TaskSpec,
    *,
    split: str = "test",
    data_dir: str | Path | None = None,
    exclude_toxic: bool = False,
    tp_seed: int = 0,
    others_from_sample: bool = False,
    stored_combinations: bool = False,
) -> tuple[MemoryDataset, str]:
    """The instances of ``task`` as an Inspect dataset (sample ids: the CCPT instance ids; the solver builds the prompt
    from the metadata), and the dataset files' digest (its version); ``others_from_sample``: Task 3's "others" drawn
    as the authors did (:func:`others_as_run`); ``stored_combinations``: each combination as its file wrote it,
    trailing punctuation kept ("a beaten dog,"), as the authors' prompts and judge had it."""
    ds = load_dataset(data_dir, exclude_toxic=exclude_toxic)
    items = instances(ds, task.name, split, seed=tp_seed)
    if not task.generative:  # Task 3: the authors' "others" where asked, then the four types in turns
        items = interleave_types(others_as_run(items, tp_seed) if others_from_sample else items)  # type: ignore[arg-type]
    if stored_combinations:
        stored = {r.id: r.stored_combination for r in ds.paper_records + ds.extra_emergent if r.stored_combination}
        items = [_as_stored(item, stored) for item in items]
    return MemoryDataset([_sample(task, item) for item in items], name=f"ccpt_{task.name}_{split}"), ds.sha256


def _as_stored(item: Record | TypeItem, stored: dict[str, str]) -> Record | TypeItem:
    """``item`` with its combination as its row's file wrote it (a Task-3 item's: its combination's row)."""
    row = item.source if isinstance(item, TypeItem) else item.id
    return replace(item, combination=stored[row]) if row in stored else item


def others_as_run(items: Sequence[TypeItem], seed: int) -> list[TypeItem]:
    """Task 3 with the authors' "others": each joins the combination of one sampled typed item with the property
    of another (or the same) one, drawn with replacement (a pair drawn twice is drawn anew: sample ids are unique)."""
    typed = [item for item in items if item.gold != OTHERS]
    n = len(items) - len(typed)
    rng = random.Random(f"others-as-run|{seed}")
    drawn: dict[tuple[str, str], TypeItem] = {}
    while len(drawn) < n:
        a, b = rng.choice(typed), rng.choice(typed)
        item = TypeItem(a.combination, a.head, a.modifier, b.property, OTHERS, a.source, b.source)
        drawn.setdefault((item.source, b.source), item)
    out = [*typed, *drawn.values()]
    rng.shuffle(out)
    return out


def interleave_types(items: Sequence[TypeItem]) -> list[TypeItem]:
    """Task-3 items in turns of the four types, each in its sampled order, so even a small ``--limit`` run measures
    every type."""
    by_type: dict[str, list[TypeItem]] = {label: [] for label in TYPE_LABELS}
    for item in items:
        by_type.setdefault(item.gold, []).append(item)
    return [item for turn in zip_longest(*by_type.values()) for item in turn if item is not None]

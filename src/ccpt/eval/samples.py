"""CCPT instances as Inspect samples (the "scenario" step: dataset records → Sample)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.dataset import MemoryDataset, Sample

from ccpt.dataset import Record, TypeItem, instances, load_dataset
from ccpt.spec import TaskSpec


def _sample(task: TaskSpec, item: Record | TypeItem) -> Sample:
    meta = {
        "task": task.name,
        "instance": item.id,
        "combination": item.combination,
        "head": item.head,
        "modifier": item.modifier,
        "property": item.property,
    }
    if isinstance(item, TypeItem):
        meta["gold_type"] = item.gold
        return Sample(
            id=item.id,
            input=f"Combination: {item.combination}\nProperty: {item.property}",
            target=item.gold,
            metadata=meta,
        )
    if task.completes_phrase:
        text = f"Head noun: {item.head}\nEmergent property: {item.property}"
    else:
        text = f"Combination: {item.combination}"
    return Sample(id=item.id, input=text, target=getattr(item, task.gold_field), metadata=meta)


def task_dataset(
    task: TaskSpec,
    *,
    split: str = "test",
    data_dir: str | Path | None = None,
    exclude_toxic: bool = False,
    tp_seed: int = 0,
) -> MemoryDataset:
    """The instances of ``task`` as an Inspect dataset; sample ids are the stable CCPT instance ids.

    The Sample ``input`` is a short description only: the solver builds the real prompt from the metadata,
    because the prompt depends on the method.
    """
    ds = load_dataset(data_dir, exclude_toxic=exclude_toxic)
    items = instances(ds, task.name, split, seed=tp_seed)
    return MemoryDataset([_sample(task, item) for item in items], name=f"ccpt_{task.name}_{split}")

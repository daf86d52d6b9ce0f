"""YAML from a user's file, read with a bound on what its aliases expand to.

``yaml.safe_load`` constructs no objects, but it does honour anchors and aliases, and a few hundred
bytes of nested aliases (a "billion laughs" document) stand for billions of nodes: harmless while they
stay shared, fatal the moment anything walks them (a validator, an error message's ``repr``). A file
whose nodes, aliases expanded, number more than :data:`MAX_NODES` is refused here, before anything
walks it, as a :class:`YamlTooLarge` naming the count.
"""

from __future__ import annotations

from typing import Any

import yaml

#: The most nodes a user's YAML document may stand for, each alias counted as what it expands to.
MAX_NODES = 100_000


class YamlTooLarge(yaml.YAMLError):
    """A document whose aliases expand past :data:`MAX_NODES` nodes."""


class BoundedSafeLoader(yaml.SafeLoader):
    """:class:`yaml.SafeLoader` that counts each node as often as aliases repeat it, and refuses past a budget."""

    max_nodes = MAX_NODES

    def get_single_node(self) -> Any:
        node = super().get_single_node()
        if node is not None:
            expanded_size(node, self.max_nodes)
        return node


def expanded_size(root: yaml.Node, limit: int) -> int:
    """How many nodes ``root`` stands for with every alias expanded; :class:`YamlTooLarge` past ``limit``.
    Each distinct node is sized once (memoised), so the count costs what the document's text does."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being sized: meeting one again is a cycle
    # iterative post-order walk: a deeply nested document must not exhaust the recursion limit either
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done and children:
            if id(node) in open_:
                raise YamlTooLarge(
                    "the document refers to itself through an alias (*name): it would expand without end; refused"
                )
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        open_.discard(id(node))
        total = 1 + sum(sizes.get(id(c), 1) for c in children)
        if total > limit:
            raise YamlTooLarge(
                f"the document stands for more than {limit} values once its aliases (*name) are expanded; refused"
            )
        sizes[id(node)] = total
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with the alias-expansion bound (:class:`YamlTooLarge`, a ``yaml.YAMLError``)."""
    loader = BoundedSafeLoader(text)
    try:
        return loader.get_single_data()
    except RecursionError:  # PyYAML composes and constructs recursively: a 5,000-deep list exhausts the stack
        raise YamlTooLarge("the document nests too deeply to read; refused") from None
    finally:
        loader.dispose()


__all__ = ["MAX_NODES", "BoundedSafeLoader", "YamlTooLarge", "expanded_size", "safe_load"]

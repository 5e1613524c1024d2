r"""Which names a regular expression matches, without backtracking.

vLLM matches these entries with Python's re (backtracking): a config.json's pattern such as
"(.+)+z" takes exponential time on a module name, and a list of 100,000 patterns against a
large MoE's ~50,000 module names takes hours. plan computes, once per model, which module
names each entry names, with the same answers as re.match (a prefix match from the name's
first character), by a Thompson NFA built from the pattern's parse (re._parser) and run as
a lazily built DFA over a trie of the names: linear in the names' characters, whatever the
pattern. Constructs a DFA cannot run (back-references, lookarounds, \b, atomic groups,
possessive repeats, conditionals) are refused, and so is a list whose matching would take
more than MATCH_BUDGET steps (counted, not timed: the same file always gets the same answer).
"""

from __future__ import annotations

import re
from re import _constants as _C  # the parse of a pattern, as re compiles it
from re import _parser as _P
from typing import Any

MATCH_BUDGET = 20_000_000  # trie steps + NFA states visited + substring characters scanned
MAX_NFA_STATES = 20_000  # one pattern's NFA (a{1000}{1000} expands to a million)
# a substring entry is looked for in all the names at once (C's str.find): a character
# scanned is counted as 1/SUBSTRING_SCAN_WEIGHT of a step of the Python-run DFA
SUBSTRING_SCAN_WEIGHT = 100


_UNSUPPORTED = {
    "ASSERT": "a lookaround",
    "ASSERT_NOT": "a negative lookaround",
    "GROUPREF": "a back-reference",
    "GROUPREF_EXISTS": "a conditional group",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive repeat",
    "AT_BOUNDARY": "\\b",
    "AT_NON_BOUNDARY": "\\B",
}


class Unsupported(Exception):
    """A pattern this matcher cannot run (the reason)."""


class Budget:
    def __init__(self, limit: int = MATCH_BUDGET) -> None:
        self.left = limit

    def spend(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise Unsupported("over budget")


def _char_test(op: Any, av: Any, flags: int) -> Any:
    """A predicate on one character for one parsed atom (LITERAL, NOT_LITERAL, ANY, IN)."""
    ascii_only = bool(flags & re.ASCII)

    def category(cat: Any, c: str) -> bool:
        name = str(cat)
        if ascii_only and not c.isascii():
            return name.startswith("CATEGORY_NOT")
        if name.endswith("NOT_DIGIT"):
            return not c.isdecimal()
        if name.endswith("DIGIT"):
            return c.isdecimal()
        if name.endswith("NOT_SPACE"):
            return not c.isspace()
        if name.endswith("SPACE"):
            return c.isspace()
        if name.endswith("NOT_WORD"):
            return not (c.isalnum() or c == "_")
        if name.endswith("WORD"):
            return c.isalnum() or c == "_"
        raise Unsupported(f"the class {name}")

    negate = False  # a negated atom is the complement of the positive test's case variants
    if op is _C.ANY:
        dotall = bool(flags & re.DOTALL)
        return lambda c: dotall or c != "\n"
    if op in (_C.LITERAL, _C.NOT_LITERAL):
        negate = op is _C.NOT_LITERAL
        hit = lambda c: ord(c) == av  # noqa: E731
    elif op is _C.IN:
        negate = any(item_op is _C.NEGATE for item_op, _ in av)
        items = [(item_op, item) for item_op, item in av if item_op is not _C.NEGATE]
        for item_op, _ in items:
            if item_op not in (_C.LITERAL, _C.NOT_LITERAL, _C.RANGE, _C.CATEGORY):
                raise Unsupported(f"the set item {item_op}")

        def hit(c: str) -> bool:
            o = ord(c)
            return any(
                (item_op is _C.LITERAL and o == item)
                or (item_op is _C.NOT_LITERAL and o != item)
                or (item_op is _C.RANGE and item[0] <= o <= item[1])
                or (item_op is _C.CATEGORY and category(item, c))
                for item_op, item in items
            )

    else:  # pragma: no cover - callers pass the four above
        raise Unsupported(str(op))
    if flags & re.IGNORECASE:  # as sre: the character, its lower and its upper case
        return lambda c: (hit(c) or hit(c.lower()) or hit(c.upper())) != negate
    return lambda c: hit(c) != negate


class _Nfa:
    """Thompson NFA: per state ('char', test, next) | ('split', nexts) | ('begin'|'end', next)
    | ('accept',)."""

    def __init__(self, pattern: str) -> None:
        parsed = _P.parse(pattern, 0)
        self.states: list[list[Any]] = [["accept"]]
        self.start = self._seq(list(parsed), 0, parsed.state.flags)

    def _new(self, state: list[Any]) -> int:
        if len(self.states) >= MAX_NFA_STATES:
            raise Unsupported(f"more than {MAX_NFA_STATES} states once its repeats are expanded")
        self.states.append(state)
        return len(self.states) - 1

    def _seq(self, items: list[Any], nxt: int, flags: int) -> int:
        for op, av in reversed(items):
            nxt = self._item(op, av, nxt, flags)
        return nxt

    def _item(self, op: Any, av: Any, nxt: int, flags: int) -> int:
        if op in (_C.LITERAL, _C.NOT_LITERAL, _C.ANY, _C.IN):
            return self._new(["char", _char_test(op, av, flags), nxt])
        if op is _C.BRANCH:
            return self._new(["split", [self._seq(list(alt), nxt, flags) for alt in av[1]]])
        if op is _C.SUBPATTERN:
            _group, add, remove, sub = av
            return self._seq(list(sub), nxt, (flags | add) & ~remove)
        if op in (_C.MAX_REPEAT, _C.MIN_REPEAT):  # greedy or lazy: the same yes/no
            low, high, sub = av
            cur = nxt
            if high == _C.MAXREPEAT:
                loop = self._new(["split", []])
                loop_state = self.states[loop]
                loop_state[1] = [self._seq(list(sub), loop, flags), nxt]
                cur = loop
            else:
                for _ in range(high - low):
                    cur = self._new(["split", [self._seq(list(sub), cur, flags), nxt]])
            for _ in range(low):
                cur = self._seq(list(sub), cur, flags)
            return cur
        if op is _C.AT:
            if av in (_C.AT_BEGINNING, _C.AT_BEGINNING_STRING):
                return self._new(["begin", nxt])
            if av in (_C.AT_END, _C.AT_END_STRING):  # module names hold no newline
                return self._new(["end", nxt])
        name = str(av if op is _C.AT else op)
        raise Unsupported(_UNSUPPORTED.get(name, name.lower()))


class _Dfa:
    """`_Nfa` run as a DFA built as the names need it; a state is a frozenset of NFA states
    (after following every empty move that does not need the name's end)."""

    def __init__(self, nfa: _Nfa, budget: Budget) -> None:
        self.nfa, self.budget = nfa, budget
        self.moves: dict[tuple[frozenset[int], str], frozenset[int]] = {}
        self.ends: dict[frozenset[int], bool] = {}
        self.start = self._closure([nfa.start], at_start=True)

    def _closure(self, seeds: Any, *, at_start: bool, at_end: bool = False) -> frozenset[int]:
        seen: set[int] = set()
        stack = list(seeds)
        while stack:
            s = stack.pop()
            if s in seen:
                continue
            seen.add(s)
            state = self.nfa.states[s]
            kind = state[0]
            if kind == "split":
                stack.extend(state[1])
            elif (kind == "begin" and at_start) or (kind == "end" and at_end):
                stack.append(state[1])
        self.budget.spend(len(seen) + 1)
        return frozenset(seen)

    def step(self, d: frozenset[int], c: str) -> frozenset[int]:
        key = (d, c)
        out = self.moves.get(key)
        if out is None:
            states = self.nfa.states
            nxt = [states[s][2] for s in d if states[s][0] == "char" and states[s][1](c)]
            out = self._closure(nxt, at_start=False)
            self.moves[key] = out
        return out

    def accepts_at_end(self, d: frozenset[int]) -> bool:
        if d not in self.ends:
            self.ends[d] = 0 in self._closure(d, at_start=False, at_end=True)
        return self.ends[d]


def trie_of(names: Any) -> dict[str, Any]:
    """The names as a trie of characters; "" keys a node's name when one ends there."""
    root: dict[str, Any] = {}
    for name in names:
        node = root
        for c in name:
            node = node.setdefault(c, {})
        node[""] = name
    return root


def _below(node: dict[str, Any], budget: Budget) -> list[str]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        budget.spend(1)
        for c, child in n.items():
            if c == "":
                out.append(child)
            else:
                stack.append(child)
    return out


def regex_names(pattern: str, trie: dict[str, Any], budget: Budget) -> list[str]:
    """The names of `trie` that re.match(pattern, name) matches."""
    dfa = _Dfa(_Nfa(pattern), budget)
    out: list[str] = []
    stack = [(trie, dfa.start)]
    while stack:
        node, d = stack.pop()
        budget.spend(1)
        if not d:
            continue
        if 0 in d:  # matched a prefix: every name below matches
            out.extend(_below(node, budget))
            continue
        for c, child in node.items():
            if c == "":
                if dfa.accepts_at_end(d):
                    out.append(child)
            else:
                stack.append((child, dfa.step(d, c)))
    return out

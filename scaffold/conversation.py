"""The target's conversation: a tree of messages with a movable head.

Rolling back moves the head to an earlier message; messages added afterwards branch
from there. The target only ever sees the path from the root to the head (the
current branch); every branch stays in the tree for the transcript.

The current branch is kept as a list plus an index, so appending and reading the
target's view are O(1) amortised, and a rollback costs the number of messages it
discards.
"""

from __future__ import annotations

from scaffold.messages import Message, ToolCall


class RollbackError(ValueError):
    """A rollback named a message that is not on the current branch."""


class TargetConversation:
    """The tree of target messages and the current branch through it."""

    def __init__(self) -> None:
        self.nodes: dict[str, Message] = {}
        self.children: dict[str | None, list[str]] = {}
        self._branch: list[Message] = []
        self._position: dict[str, int] = {}

    @property
    def head_id(self) -> str | None:
        """Id of the last message on the current branch, or None when it is empty."""
        return self._branch[-1].id if self._branch else None

    def current_branch(self) -> list[Message]:
        """The messages the target sees, root first. A copy: callers may keep it."""
        return list(self._branch)

    def __len__(self) -> int:
        return len(self._branch)

    def on_branch(self, message_id: str) -> bool:
        """Whether `message_id` is on the current branch."""
        return message_id in self._position

    def append(self, message: Message) -> Message:
        """Add `message` after the head. A system message starts a fresh tree root."""
        if message.role == "system":
            self._truncate(0)
            message = message.model_copy(update={"parent_id": None})
        else:
            message = message.model_copy(update={"parent_id": self.head_id})
        self.nodes[message.id] = message
        self.children.setdefault(message.parent_id, []).append(message.id)
        self._position[message.id] = len(self._branch)
        self._branch.append(message)
        return message

    def rollback_to(self, message_id: str | None) -> int:
        """Move the head to `message_id` (None: before the first message).

        Returns how many messages left the current branch.
        """
        if message_id is None:
            keep = 0
        elif message_id in self._position:
            keep = self._position[message_id] + 1
        else:
            raise RollbackError(f"message {message_id!r} is not on the current target branch")
        removed = len(self._branch) - keep
        self._truncate(keep)
        return removed

    def _truncate(self, keep: int) -> None:
        while len(self._branch) > keep:
            gone = self._branch.pop()
            del self._position[gone.id]

    def system_message_id(self) -> str | None:
        """The id of the current branch's system message, if it has one."""
        if self._branch and self._branch[0].role == "system":
            return self._branch[0].id
        return None

    def pending_tool_calls(self) -> list[ToolCall]:
        """Tool calls by the target on the current branch that have no result yet."""
        answered: set[str] = set()
        for message in reversed(self._branch):
            if message.role == "tool" and message.tool_call_id:
                answered.add(message.tool_call_id)
            elif message.role == "assistant":
                return [c for c in message.tool_calls if c.id not in answered]
            else:
                return []
        return []

    def before(self, message_id: str) -> list[Message]:
        """The messages before `message_id` on its own branch, root first: what the target had
        been shown when it wrote that message, whichever branch is current now."""
        path, parent = [], self.nodes[message_id].parent_id
        while parent is not None:
            path.append(self.nodes[parent])
            parent = self.nodes[parent].parent_id
        return path[::-1]

    def branches(self) -> list[list[str]]:
        """Every root-to-leaf path of message ids, in creation order."""
        paths: list[list[str]] = []
        stack: list[tuple[str, list[str]]] = [(r, [r]) for r in reversed(self.children.get(None, []))]
        while stack:
            node, path = stack.pop()
            kids = self.children.get(node, [])
            if not kids:
                paths.append(path)
            for kid in reversed(kids):
                stack.append((kid, path + [kid]))
        return paths

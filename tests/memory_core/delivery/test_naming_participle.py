"""A participle with its object is a verb, not a qualifier of the head noun: in "a unix
socket listing queues" the words before "queues" are not a new kind of queue (the socket
lists them). The cue is agreement: "a" cannot open a noun phrase whose head is plural, so
"a unix socket" is one phrase and "listing queues" another. Sentences written for this test,
none from the held-out parts."""

from __future__ import annotations

import pytest

from memory_core.delivery import naming
from memory_core.delivery.entries import words
from memory_core.delivery.prompt import Said

QUEUE = "dead-letter queue"
QUEUE_VOCAB = words("dead-letter queue jobs past their last attempt, kept with the final error and replayable "
                    "max_attempts dead-letter table replay")
INVENTORY = QUEUE_VOCAB | words("admin API read-only JSON endpoints on a unix socket: queues, jobs, metrics")


@pytest.mark.parametrize("prompt", [
    "serve a status page over a unix socket listing queues",
    "add an HTTP endpoint exporting queues with their sizes",
    "write a small daemon draining queues at night",
])
def test_a_participle_taking_the_plural_head_as_its_object_names_no_new_kind(prompt):
    assert naming.new_instance(Said(prompt), QUEUE, QUEUE_VOCAB, INVENTORY) is None


@pytest.mark.parametrize("prompt, new", [
    ("add a priority queue for urgent jobs", "priority"),                 # singular head: a qualifier
    ("add a rate limiting queue in front of the workers", "rate limiting"),  # agrees: a compound kind
    ("add rate limiting queues per tenant", "rate limiting"),             # no article to disagree with
])
def test_a_participle_agreeing_with_its_head_still_qualifies_it(prompt, new):
    assert naming.new_instance(Said(prompt), QUEUE, QUEUE_VOCAB, INVENTORY) == new

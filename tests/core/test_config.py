"""Settings are read from the environment at each use: core/config.py's fast read of
os.environ's store answers what os.environ.get answers, after any kind of write."""
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazyx.core import config

_NAME = "LAZYX_TEST_CONFIG_VALUE"


@settings(max_examples=60, deadline=None)
@given(value=st.one_of(st.none(), st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)))
def test_the_fast_read_answers_what_os_environ_answers(value):
    try:
        if value is None:
            os.environ.pop(_NAME, None)
        else:
            os.environ[_NAME] = value
        assert config._env(_NAME) == os.environ.get(_NAME)
    finally:
        os.environ.pop(_NAME, None)


def test_a_setting_changed_by_monkeypatch_is_seen_at_once(monkeypatch):
    monkeypatch.setenv("LAZYX_NODE_CAP", "37")
    assert config.node_cap() == 37
    monkeypatch.setenv("LAZYX_NODE_CAP", "")
    assert config.node_cap() == 100_000
    monkeypatch.delenv("LAZYX_NODE_CAP")
    assert config.node_cap() == 100_000


def test_loop_cut_defaults_to_5000_and_0_turns_it_off(monkeypatch):
    monkeypatch.delenv("LAZYX_LOOP_CUT", raising=False)
    assert config.loop_cut() == 5_000  # (the README's figure)
    monkeypatch.setenv("LAZYX_LOOP_CUT", "0")
    assert config.loop_cut() == 0
    monkeypatch.setenv("LAZYX_LOOP_CUT", "-3")
    assert config.loop_cut() == 0
    monkeypatch.setenv("LAZYX_LOOP_CUT", "lots")
    with pytest.raises(ValueError, match="LAZYX_LOOP_CUT"):
        config.loop_cut()

"""One IR, two capture mechanisms: for each model, the forward graph captured by TorchDynamo
(torch.compile(backend="lazyx"), inference) against the same forward traced lazily
(lt.device), by lazyx.graph_hash. Where they differ, the first differing instruction.

    PYTHONPATH=.dev python scripts/dynamo_graph_hash.py [--models mlp,cnn]
"""
import argparse
import copy
import sys
import warnings

import torch


def models():
    import transformers
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    cnn = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Conv2d(8, 8, 3),
                              torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Flatten(),
                              torch.nn.Linear(8 * 4 * 4, 10))
    block = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    gpt2 = transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False))  # (else K/V caches are outputs)
    bert = transformers.BertModel(transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=32, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0), add_pooling_layer=False)
    ids = torch.randint(0, 64, (2, 12))
    return {
        "mlp": (mlp, (torch.randn(8, 16),), lambda out: out),
        "cnn": (cnn, (torch.randn(2, 3, 12, 12),), lambda out: out),
        "transformer block": (block, (torch.randn(2, 10, 32),), lambda out: out),
        "gpt2": (gpt2, (ids,), lambda out: out.last_hidden_state),
        "bert": (bert, (ids,), lambda out: out.last_hidden_state),
    }


def compare(name, model, inputs, pick, fastpath=True):
    import lazyx
    import lazyx.frontends.torch as lt
    from lazyx.core import debug
    from lazyx.frontends.torch import dynamo
    model.eval()
    lazy = copy.deepcopy(model).to(lt.device)
    torch.backends.mha.set_fastpath_enabled(fastpath)
    with torch.no_grad():
        lazy_out = pick(lazy(*(x.to(lt.device) for x in inputs)))
        lazy_program = lazyx.core.runtime.program_of(lazy_out)[0]
        torch._dynamo.reset()
        before = dynamo.COMPILED[0]
        compiled = torch.compile(model, backend=lt.dynamo_backend, dynamic=False)
        torch.backends.mha.set_fastpath_enabled(fastpath)
        try:
            pick(compiled(*inputs))
        finally:
            torch.backends.mha.set_fastpath_enabled(True)
    graphs = dynamo.compiled_since(before)
    lazyx.sync()
    if len(graphs) != 1 or graphs[0].graph_hash is None:
        eager = [s.name for g in graphs for s in g.steps if isinstance(s, dynamo._Eager)]
        return name, lazy_program.graph_hash, None, \
            f"{len(graphs)} captured graph(s); ran eagerly: {', '.join(eager) or 'none'}"
    captured = graphs[0].programs[0]
    # a captured graph returns every output of the model: compare the one the lazy run made
    same = captured.graph_hash == lazy_program.graph_hash
    why = "" if same else first_difference(lazy_program, captured, debug)
    return name, lazy_program.graph_hash, captured.graph_hash, why


def first_difference(a, b, debug):
    """The instructions (op, attributes, type) one program has more of than the other."""
    import collections

    def bag(p):
        return collections.Counter(
            f"{op}{'{' + debug._attrs_text(attrs) + '}' if attrs else ''} : "
            f"{debug.type_text(shape, dtype)}" for op, attrs, _i, shape, dtype, _c in p.instructions)
    lazy, dyn = bag(a), bag(b)
    only_lazy, only_dyn = lazy - dyn, dyn - lazy
    if not only_lazy and not only_dyn:
        return f"same instructions, wired differently (leaves {len(a.leaves)} / {len(b.leaves)})"
    show = lambda c: "; ".join(f"{n}x `{k}`" for k, n in list(c.items())[:4]) or "nothing"
    return f"lazy only: {show(only_lazy)} -- dynamo only: {show(only_dyn)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated subset")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen = models()
    if args.models:
        chosen = {k: v for k, v in chosen.items() if k in args.models.split(",")}
    print("| model | lazy graph_hash | Dynamo graph_hash | difference |")
    print("| --- | --- | --- | --- |")
    for name, (model, inputs, pick) in chosen.items():
        name, lazy_hash, dyn_hash, why = compare(name, model, inputs, pick)
        print(f"| {name} | {lazy_hash} | {dyn_hash} | {why or 'same'} |")
        if name == "transformer block":
            # nn.MultiheadAttention's inference fast path is taken for CPU tensors only
            name, lazy_hash, dyn_hash, why = compare(name, model, inputs, pick, fastpath=False)
            print(f"| {name}, fast path off | {lazy_hash} | {dyn_hash} | {why or 'same'} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

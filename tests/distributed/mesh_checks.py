"""Checks shared by the multi-device tests."""
import lazyx


def assert_laid_out(tensor, spec, mesh):
    """On XLA, realized data lies on the mesh as `spec` (() = replicated there); the reference
    backend keeps one whole copy, so there is nothing to check."""
    if lazyx.backend() != "xla":
        return
    sharding = lazyx.distributed.sharding_of(tensor)
    assert sharding is not None, "the value left the mesh"
    assert sharding.mesh == mesh.spec, (sharding, mesh)
    assert sharding == lazyx.distributed.Sharding(mesh.spec, spec), sharding

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches and lazyx's metrics cleared around a test (torch.compile tests use it
    module-wide: `pytestmark = pytest.mark.usefixtures("fresh_dynamo")`)."""
    import lazyx
    torch._dynamo.reset()
    lazyx.reset_metrics()
    yield
    torch._dynamo.reset()

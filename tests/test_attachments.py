"""What a returned or input tensor may carry: nothing that runs code when the harness drops it."""
import torch

from evolve.harness.rungs import _attachment


class Marker:
    pass


def test_a_plain_tensor_and_its_views_carry_nothing():
    x = torch.zeros(4, 4)
    assert _attachment(x) is None
    assert _attachment(x.view(16)) is None and _attachment(x[1:]) is None


def test_attributes_on_the_tensor_its_storage_or_a_views_base_are_seen():
    x = torch.zeros(4)
    x.tag = Marker()
    assert _attachment(x) == "Python attributes"
    assert _attachment(x[1:]) == "Python attributes"  # through the view's base
    y = torch.zeros(4)
    y.untyped_storage().tag = Marker()
    assert _attachment(y) == "Python attributes"


def test_autograd_state_and_hooks_are_seen():
    x = torch.zeros(4, requires_grad=True)
    assert _attachment(x) == "autograd state"
    y = torch.zeros(4)
    y.grad = torch.zeros(4)
    assert _attachment(y) == "autograd state"
    z = (torch.zeros(4, requires_grad=True) * 2)
    assert _attachment(z) == "autograd state"  # a grad_fn holds the graph

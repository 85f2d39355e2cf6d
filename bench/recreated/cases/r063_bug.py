import tempfile

import pytest
import torch

from e3nn.nn.models.gate_points_2101 import Network


@pytest.fixture
def network():
    num_nodes = 5
    irreps_in = "3x0e + 2x1o"
    irreps_attr = "10x0e"
    irreps_out = "2x0o + 2x1o + 2x2e"

    f = Network(
        irreps_in, irreps_hidden="5x0e + 5x0o + 5x1e + 5x1o", irreps_out=irreps_out,
        irreps_node_attr=irreps_attr, irreps_edge_attr="0e + 1e", layers=3, max_radius=2.0,
        number_of_basis=5, radial_layers=2, radial_neurons=128, num_neighbors=4.0,
        num_nodes=num_nodes, reduce_output=False)

    def random_graph():
        return {
            "pos": torch.randn(num_nodes, 3),
            "x": f.irreps_in.randn(num_nodes, -1),
            "z": f.irreps_node_attr.randn(num_nodes, -1),
        }

    return f, random_graph


@pytest.mark.parametrize("dtype", [torch.float32])
def test_save(network, dtype) -> None:
    f, random_graph = network
    # Get a saved, loaded network
    with tempfile.NamedTemporaryFile(suffix=".pth") as tmp:
        torch.save(f, tmp.name)
        f2 = torch.load(tmp.name)
    x = random_graph()
    assert torch.all(f(x) == f2(x))

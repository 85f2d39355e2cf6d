import torch


def point_line_distance_range(lines: torch.Tensor, points: torch.Tensor):
    """calculate the maximal distance between the points in the direction perpendicular to the line
    methode: point-line-distance

    Args:
        lines (torch.Tensor): (..., 24, 4)
        points (torch.Tensor): (..., 24, 8, 2)

    Returns:
        torch.Tensor: (..., 24)
    """
    x1 = lines[..., 0:1]    # (..., 24, 1)
    y1 = lines[..., 1:2]
    x2 = lines[..., 2:3]
    y2 = lines[..., 3:4]
    # distance = cross((x0-x1, y0-y1), (x2-x1, y2-y1)) / norm(x2-x1, y2-y1)
    A = y2 - y1
    B = x1 - x2
    C = x2 * y1 - x1 * y2
    num = torch.sqrt((y2 - y1).square() + (x2 - x1).square()) + 1e-8
    dist = ((A * points[..., 0] + B * points[..., 1] + C) / num).abs()   # (..., 24, 8)
    dist1 = torch.max(dist, dim=-1)[0]
    dist2 = torch.min(dist, dim=-1)[0]
    return dist1 - dist2


def smallest_bounding_box(lines: torch.Tensor, points: torch.Tensor):
    """return the area of the smallest enclosing box over 24 candidate edges"""
    w = point_line_distance_range(lines, points)
    h = point_line_distance_range(lines[..., [1, 0, 3, 2]] * torch.tensor([-1., 1., -1., 1.]), points)
    return (w * h).min(dim=-1)[0]


lines = torch.randn(4, 24, 4, requires_grad=True)
points = torch.randn(4, 24, 8, 2, requires_grad=True)
area = smallest_bounding_box(lines, points)
loss = area.mean()
loss.backward()

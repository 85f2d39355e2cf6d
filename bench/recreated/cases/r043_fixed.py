import torch
import torch.nn.functional as F


def dice_loss(
        inputs: torch.Tensor,
        targets: torch.Tensor,
        num_masks: float,
    ):
    """
    Compute the DICE loss, similar to generalized IOU for masks
    """
    inputs = inputs.sigmoid()
    inputs = inputs.flatten(1)
    numerator = 2 * (inputs * targets).sum(-1)
    denominator = inputs.sum(-1) + targets.sum(-1)
    loss = 1 - (numerator + 1) / (denominator + 1)
    loss = loss.sum()
    if num_masks != 0:
        loss /= num_masks

    return loss


def sigmoid_ce_loss(
        inputs: torch.Tensor,
        targets: torch.Tensor,
        num_masks: float,
    ):
    loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")

    loss = loss.mean(1).sum()
    if num_masks != 0:
        loss /= num_masks

    return loss


def mask_losses(pred_masks, gt_masks):
    num_masks = len(gt_masks)
    pred_masks = pred_masks.flatten(1)
    gt_masks = gt_masks.flatten(1).float()
    return {
        "loss_mask": sigmoid_ce_loss(pred_masks, gt_masks, num_masks),
        "loss_dice": dice_loss(pred_masks, gt_masks, num_masks),
    }

import math
import sys

import torch
import torch.nn.functional as F
from tqdm import tqdm

from eval_func import eval_detection, eval_search_cuhk, eval_search_prw
from utils.utils import MetricLogger, SmoothedValue, mkdir, reduce_dict, warmup_lr_scheduler


def to_device(images, targets, device):
    images = [image.to(device) for image in images]
    for t in targets:
        t["boxes"] = t["boxes"].to(device)
        t["labels"] = t["labels"].to(device)
    return images, targets


def train_one_epoch(cfg, model, optimizer, data_loader, device, epoch, tfboard=None):
    model.train()
    metric_logger = MetricLogger(delimiter="  ")
    metric_logger.add_meter("lr", SmoothedValue(window_size=1, fmt="{value:.6f}"))
    header = "Epoch: [{}]".format(epoch)

    # warmup learning rate in the first epoch
    if epoch == 0:
        warmup_factor = 1.0 / 1000
        warmup_iters = len(data_loader) - 1
        warmup_scheduler = warmup_lr_scheduler(optimizer, warmup_iters, warmup_factor)

    for i, (images, targets) in enumerate(metric_logger.log_every(data_loader, cfg.DISP_PERIOD, header)):
        images, targets = to_device(images, targets, device)

        loss_dict = model(images, targets)
        losses = sum(loss for loss in loss_dict.values())

        # reduce losses over all GPUs for logging purposes
        loss_dict_reduced = reduce_dict(loss_dict)
        losses_reduced = sum(loss for loss in loss_dict_reduced.values())
        loss_value = losses_reduced.item()

        if not math.isfinite(loss_value):
            print(f"Loss is {loss_value}, stopping training")
            print(loss_dict_reduced)
            sys.exit(1)

        optimizer.zero_grad()
        losses.backward()
        if cfg.SOLVER.CLIP_GRADIENTS > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.SOLVER.CLIP_GRADIENTS)
        optimizer.step()

        if epoch == 0:
            warmup_scheduler.step()

        metric_logger.update(loss=loss_value, **loss_dict_reduced)
        metric_logger.update(lr=optimizer.param_groups[0]["lr"])


def evaluate_performance(
    model, gallery_loader, query_loader, device, use_gt=False, use_cache=False, use_cbgm=False
):
    """
    Args:
        use_gt (bool, optional): Whether to use GT as detection results to verify the upper
                                bound of person search performance. Defaults to False.
        use_cache (bool, optional): Whether to use the cached features. Defaults to False.
        use_cbgm (bool, optional): Whether to use Context Bipartite Graph Matching algorithm.
                                Defaults to False.
    """
    model.eval()
    gallery_dets, gallery_feats = [], []
    for images, targets in tqdm(gallery_loader, ncols=0):
        images, targets = to_device(images, targets, device)
        if not use_gt:
            outputs = model(images)
        else:
            boxes = targets[0]["boxes"]
            n_boxes = boxes.size(0)
            embeddings = model(images, targets)
            outputs = [
                {
                    "boxes": boxes,
                    "embeddings": torch.cat(embeddings),
                    "labels": torch.ones(n_boxes).to(device),
                    "scores": torch.ones(n_boxes).to(device),
                }
            ]

        for output in outputs:
            box_w_scores = torch.cat([output["boxes"], output["scores"].unsqueeze(1)], dim=1)
            gallery_dets.append(box_w_scores.cpu().numpy())
            gallery_feats.append(output["embeddings"].cpu().numpy())

    # regarding query image as gallery to detect all people
    # i.e. query person + surrounding people (context information)
    query_dets, query_feats = [], []
    for images, targets in tqdm(query_loader, ncols=0):
        images, targets = to_device(images, targets, device)
        # targets will be modified in the model, so deepcopy it
        outputs = model(images, [dict(t) for t in targets], query_img_as_gallery=True)

        # consistency check
        gt_box = targets[0]["boxes"].squeeze()
        assert (
            gt_box - outputs[0]["boxes"][0]
        ).sum() <= 0.001, "GT box must be the first one in the detected boxes of query image"

        for output in outputs:
            box_w_scores = torch.cat([output["boxes"], output["scores"].unsqueeze(1)], dim=1)
            query_dets.append(box_w_scores.cpu().numpy())
            query_feats.append(F.normalize(output["embeddings"], dim=1).cpu().numpy())

    mAP = eval_detection(gallery_loader.dataset, gallery_dets, det_thresh=0.01)
    eval_search_func = (
        eval_search_cuhk if gallery_loader.dataset.name == "CUHK-SYSU" else eval_search_prw
    )
    eval_search_func(
        gallery_loader.dataset,
        query_loader.dataset,
        gallery_dets,
        gallery_feats,
        query_feats,
        query_dets,
        det_thresh=0.5,
        cbgm=use_cbgm,
    )
    return mAP

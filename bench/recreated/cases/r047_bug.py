import argparse

import torch

from data_utils.metrics import calc_metrics
from mt_dnn.batcher import BatchGen
from mt_dnn.model import MTDNNModel


def eval_model(model, data, metric_meta, use_cuda=True, with_label=True):
    data.reset()
    if use_cuda:
        model.cuda()
    predictions = []
    golds = []
    scores = []
    ids = []
    metrics = {}
    for batch_meta, batch_data in data:
        score, pred, gold = model.predict(batch_meta, batch_data)
        predictions.extend(pred)
        golds.extend(gold)
        scores.extend(score)
        ids.extend(batch_meta['uids'])
    if with_label:
        metrics = calc_metrics(metric_meta, golds, predictions, scores)
    return metrics, predictions, scores, golds, ids


parser = argparse.ArgumentParser()
parser.add_argument("--prep_input", type=str, required=True)
parser.add_argument("--checkpoint", type=str, required=True)
parser.add_argument('--cuda', type=bool, default=torch.cuda.is_available())
parser.add_argument("--with_label", action="store_true")
args = parser.parse_args()

state_dict = torch.load(args.checkpoint)
config = state_dict['config']
config["cuda"] = args.cuda
model = MTDNNModel(config, state_dict=state_dict)
test_data = BatchGen(BatchGen.load(args.prep_input, False), batch_size=8, gpu=args.cuda, is_train=False)

test_metrics, test_predictions, scores, golds, test_ids = eval_model(model, test_data,
                                                                     metric_meta=("ACC",),
                                                                     use_cuda=args.cuda,
                                                                     with_label=args.with_label)
print(test_metrics)

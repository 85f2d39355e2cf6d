import torch
import pretrainedmodels

save_path = "here.pt"
m = pretrainedmodels.resnet18(num_classes=1000, pretrained="imagenet")
torch.save(m, save_path)
torch.load(save_path)

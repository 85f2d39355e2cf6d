import torch
import pretrainedmodels

save_path = "here.pt"
m = pretrainedmodels.resnet18(num_classes=1000, pretrained="imagenet")
torch.save(m.state_dict(), save_path)
m.load_state_dict(torch.load(save_path))

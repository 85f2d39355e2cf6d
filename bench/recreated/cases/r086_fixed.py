# This script trains FBPConvNet on LIDC-IDRI reconstructions
import pathlib

import numpy as np
import torch
from tqdm import tqdm

from LION.models.post_processing.FBPConvNet import FBPConvNet
from LION.utils.parameter import LIONParameter
import LION.experiments.ct_experiments as ct_experiments
from ts_algorithms import fdk

device = torch.device("cuda:0")
torch.cuda.set_device(device)
savefolder = pathlib.Path("/store/DAMTP/ab2860/trained_models/test_debugging/")
final_result_fname = savefolder.joinpath("FBPConvNet_final_iter.pt")
validation_fname = savefolder.joinpath("FBPConvNet_min_val.pt")

experiment = ct_experiments.clinicalCTRecon()
lidc_dataset = experiment.get_training_dataset()
lidc_dataset_val = experiment.get_validation_dataset()

batch_size = 4
lidc_dataloader = torch.utils.data.DataLoader(lidc_dataset, batch_size, shuffle=True)
lidc_validation = torch.utils.data.DataLoader(lidc_dataset_val, batch_size, shuffle=True)

model = FBPConvNet().to(device)

train_param = LIONParameter()
train_param.epochs = 100
train_param.learning_rate = 1e-3
train_param.betas = (0.9, 0.99)
train_param.loss = "MSELoss"
optimiser = torch.optim.Adam(model.parameters(), lr=train_param.learning_rate, betas=train_param.betas)
loss_fcn = torch.nn.MSELoss()

op = experiment.geo
train_loss = np.zeros(train_param.epochs)
validation_loss = np.zeros(train_param.epochs)
min_valid_loss = np.inf

model.train()
for epoch in range(train_param.epochs):
    for index, (sinogram, target_reconstruction) in enumerate(tqdm(lidc_dataloader)):
        optimiser.zero_grad()
        bad_recon = fdk(sinogram, op)
        reconstruction = model(bad_recon)
        loss = loss_fcn(reconstruction, target_reconstruction)
        loss.backward()
        train_loss[epoch] += loss.item()
        optimiser.step()

    # Validation
    model.eval()
    with torch.no_grad():
        for sinogram, target_reconstruction in tqdm(lidc_validation):
            reconstruction = model(fdk(sinogram, op))
            loss = loss_fcn(target_reconstruction, reconstruction)
            validation_loss[epoch] += loss.item()
    model.train()

    if min_valid_loss > validation_loss[epoch]:
        print(f"Validation Loss Decreased({min_valid_loss:.6f}--->{validation_loss[epoch]:.6f}) Saving The Model")
        min_valid_loss = validation_loss[epoch]
        torch.save({"epoch": epoch, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimiser.state_dict(), "loss": loss}, validation_fname)

    print(f"Epoch {epoch + 1} \t\t Training Loss: {train_loss[epoch] / len(lidc_dataloader)} \t\t "
          f"Validation Loss: {validation_loss[epoch] / len(lidc_validation)}")

torch.save({"epoch": train_param.epochs, "model_state_dict": model.state_dict()}, final_result_fname)

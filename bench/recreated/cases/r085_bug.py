import os

import torch
import torch.nn as nn
import nemo
from nemo.backends.pytorch.common.losses import CrossEntropyLossNM
from nemo.backends.pytorch.nm import TrainableNM
from nemo.core.neural_types import LogitsType, NeuralType, ReadPileupType
from nemo.utils.decorators import add_port_docs

from variantworks.dataloader import ReadPileupDataLoader


class ConsensusRNN(TrainableNM):
    """A model for consensus calling built on top of a GRU."""

    @property
    @add_port_docs()
    def input_ports(self):
        return {"encoding": NeuralType(('B', 'W', 'C'), ReadPileupType())}

    @property
    @add_port_docs()
    def output_ports(self):
        return {"output_logit": NeuralType(('B', 'W', 'D'), LogitsType())}

    def __init__(self, sequence_length, input_feature_size, num_output_logits, gru_size=128, gru_layers=2):
        super().__init__()
        self.sequence_length = sequence_length
        self.gru = nn.GRU(input_feature_size, gru_size, gru_layers, batch_first=True, bidirectional=True)
        self.classifier = nn.Linear(2 * gru_size, num_output_logits)
        self.softmax = nn.Softmax(dim=2)
        self._device = torch.device("cuda" if self.placement == nemo.core.DeviceType.GPU else "cpu")
        self.to(self._device)

    def forward(self, encoding):
        encoding, h_n = self.gru(encoding)
        encoding = self.classifier(encoding)
        encoding = self.softmax(encoding)
        return encoding


def create_model(train_hdf, out_dir, epochs=10, batch_size=32, lr=0.001):
    nf = nemo.core.NeuralModuleFactory(placement=nemo.core.neural_factory.DeviceType.GPU,
                                       checkpoint_dir=out_dir)

    model = ConsensusRNN(sequence_length=1000, input_feature_size=10, num_output_logits=5)

    # Create train DAG
    train_dataset = ReadPileupDataLoader(ReadPileupDataLoader.Type.TRAIN, train_hdf,
                                         batch_size=batch_size, shuffle=True, num_workers=4)
    vz_ce_loss = CrossEntropyLossNM(logits_ndim=3)
    encoding, vt_labels = train_dataset()
    vz = model(encoding=encoding)
    vz_loss = vz_ce_loss(logits=vz, labels=vt_labels)

    logger_callback = nemo.core.SimpleLossLoggerCallback(
        tensors=[vz_loss],
        step_freq=100,
        print_func=lambda x: print(f'Train Loss: {str(x[0].item())}'))

    checkpoint_callback = nemo.core.CheckpointCallback(folder=nf.checkpoint_dir, epoch_freq=1)

    nf.train([vz_loss],
             callbacks=[logger_callback, checkpoint_callback],
             optimization_params={"num_epochs": epochs, "lr": lr},
             optimizer="adam")
    return os.path.join(out_dir, "ConsensusRNN-STEP-final.pt")

import os

import torch
from tqdm import tqdm

from .base_trainer import BaseTrainer
from utils.util import get_instance
from utils.logging_config import logger


class Tester(BaseTrainer):
    """
    Tester class

    Note:
        Inherited from BaseTrainer.
        self.optimizer is by default handled by BaseTrainer based on config.
    """
    def __init__(
        self, config, data_loader, model, resume, output_root_dir=None, pretrained_path=None,
        **kwargs
    ):
        super().__init__(model, config, resume=resume, pretrained_path=pretrained_path)
        self.config = config
        self.data_loader = data_loader
        self.output_root_dir = output_root_dir
        self.writers = [get_instance(writer, 'writer', config) for writer in config['writers']]

    def _setup_writers(self):
        for writer in self.writers:
            writer.setup(self.output_root_dir)

    def _run_and_optimize_model(self, data):
        model_output = self.model(data)
        return model_output, None, None

    def _iter_data(self, epoch):
        self.model.eval()
        self._setup_writers()
        for batch_idx, data in enumerate(tqdm(self.data_loader)):
            data = self._data_to_device(data)
            model_output, _, _ = self._run_and_optimize_model(data)
            for writer in self.writers:
                writer.save_data(data, model_output)
        for writer in self.writers:
            writer.finalize()
        return {}

    def test(self):
        logger.info(f'Writing test results to {os.path.abspath(self.output_root_dir)}')
        log = self._iter_data(0)
        return log

    def _data_to_device(self, data):
        for key in data.keys():
            if isinstance(data[key], torch.Tensor):
                data[key] = data[key].to(self.device)
        return data

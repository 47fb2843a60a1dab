# -*- coding: utf-8 -*-
"""The model settings the unit tests plan with: Llama 3.1 405B fp8 on two nodes of 8 x 80 GB
(TP 8, PP 2), the layout of inventories/example."""

LLAMA_405B = {
    'nim_image': 'nvcr.io/nim/meta/llama-3.1-405b-instruct',
    'nim_image_tag': '1.3.0',
    'nim_model': 'llama-3.1-405b',
    'nim_precision': 'fp8',
    'nim_tensor_parallel': 8,
    'nim_pipeline_parallel': 2,
    'nim_gpus_per_node': 8,
    'nim_gpu_memory_gb': 80,
    'nim_mpi_start_timeout': 3000,
}

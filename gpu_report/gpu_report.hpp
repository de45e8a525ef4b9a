// `vkgmm gpu-report`: the quality of the code a device's compiler makes of vkgmm's pipelines.
#pragma once

int gpu_report_main(int argc, char** argv);

#pragma once

int bench_main(int argc, char** argv);

/* commands.h: the subcommands of the `clformer` tool. Each takes the
 * arguments after its own name (argv[0] is the subcommand) and returns the
 * process exit status: 0 on success, 1 on failure, 2 on a usage error. */
#ifndef CLF_COMMANDS_H
#define CLF_COMMANDS_H

int clf_cmd_devices(int argc, char **argv);
int clf_cmd_settings(int argc, char **argv);
int clf_cmd_bench(int argc, char **argv);
int clf_cmd_train(int argc, char **argv);
int clf_cmd_translate(int argc, char **argv);
int clf_cmd_import(int argc, char **argv);
int clf_cmd_average(int argc, char **argv);
int clf_cmd_quantize(int argc, char **argv);
int clf_cmd_bpe(int argc, char **argv);
int clf_cmd_bleu(int argc, char **argv);
int clf_cmd_data(int argc, char **argv);
int clf_cmd_tune(int argc, char **argv);
int clf_cmd_compare_attention(int argc, char **argv);
int clf_cmd_serve(int argc, char **argv);

#endif

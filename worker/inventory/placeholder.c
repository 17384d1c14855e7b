/* Placeholder until the inventory sources land. */
typedef int vf_inventory_placeholder;
